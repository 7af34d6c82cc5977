"""Builder functions: the one place where modules are wired together from explicit arguments.

Layers receive their attention, feed-forward and residual blocks already built (`LayerRecipe`), the
stacks receive their layers, embeddings and position schemes, and `build_model` puts the model
together. Modules are created in a fixed order (target embedding, source embedding, encoder, decoder,
output projection), so a seed gives the same initial weights from one release to the next.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

from torch import nn

from seq2seq.errors import UserError
from seq2seq.model.argument_checks import check_alignment_head, check_positive, validate_arguments
from seq2seq.model.decoder_only import DecoderOnly
from seq2seq.model.encoder_only import EncoderOnly
from seq2seq.model.families import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY
from seq2seq.model.transformer import Decoder, Encoder, PositionScheme, Seq2Seq, Stack
from seq2seq.nn.attention import CrossAttention, SelfAttention
from seq2seq.nn.embeddings import OutputProjection, TokenEmbedding
from seq2seq.nn.layers import DecoderLayer, EncoderLayer, FeedForward, MemoryDownsampler, Residual

# build_model's arguments the train CLI fills in from the trained tokenizer; every other one is a setting
# of the `model` config group, with its default in configs/model/base.yaml.
RUN_TIME_ARGUMENTS = ("src_vocab_size", "tgt_vocab_size", "pad_id")
AnyStack = TypeVar("AnyStack", bound=Stack)


@dataclass(frozen=True)
class LayerRecipe:
    """The settings every layer of both stacks is built from, and the parts built from them."""

    d_model: int
    n_heads: int
    ffn_dim: int
    dropout: float
    attention_dropout: float
    activation_dropout: float
    activation: str
    norm: str
    attention_backend: str
    window: int | None

    @classmethod
    def of(cls, args: dict[str, Any]) -> LayerRecipe:
        """The recipe's fields picked from `build_model`'s arguments."""
        return cls(**{field.name: args[field.name] for field in fields(cls)})

    def self_attention(self) -> SelfAttention:
        return SelfAttention(
            self.d_model,
            self.n_heads,
            dropout=self.attention_dropout,
            attention_backend=self.attention_backend,
            window=self.window,
        )

    def cross_attention(self) -> CrossAttention:
        return CrossAttention(
            self.d_model,
            self.n_heads,
            dropout=self.attention_dropout,
            attention_backend=self.attention_backend,
        )

    def feed_forward(self) -> FeedForward:
        return FeedForward(
            self.d_model, self.ffn_dim, activation=self.activation, dropout=self.activation_dropout
        )

    def residual(self) -> Residual:
        return Residual(self.d_model, norm=self.norm, dropout=self.dropout)

    def encoder_layer(self) -> EncoderLayer:
        return EncoderLayer(
            self.self_attention(), self.feed_forward(), attn_block=self.residual(), ffn_block=self.residual()
        )

    def decoder_layer(self) -> DecoderLayer:
        return DecoderLayer(
            self.self_attention(),
            self.cross_attention(),
            self.feed_forward(),
            self_block=self.residual(),
            cross_block=self.residual(),
            ffn_block=self.residual(),
        )


def _embeddings(args: dict[str, Any]) -> tuple[TokenEmbedding, TokenEmbedding]:
    """(source, target) token embeddings: one module when `share_embeddings`. Target first, always."""
    d_model, pad_id, scale = args["d_model"], args["pad_id"], args["scale_embeddings"]
    tgt_embedding = TokenEmbedding(args["tgt_vocab_size"], d_model, pad_id, scale=scale)
    if args["share_embeddings"]:
        return tgt_embedding, tgt_embedding
    return TokenEmbedding(args["src_vocab_size"], d_model, pad_id, scale=scale), tgt_embedding


def _positions(args: dict[str, Any]) -> PositionScheme:
    """One stack's position scheme (each stack has its own: learned tables are not shared)."""
    return PositionScheme(
        args["positional"],
        d_model=args["d_model"],
        n_heads=args["n_heads"],
        max_positions=args["max_positions"],
        alibi_cross=args["alibi_cross_attention"],
        sinusoid_layout=args["sinusoid_layout"],
        offset=args["position_offset"],
    )


def _stacks(
    args: dict[str, Any], src_embedding: TokenEmbedding, tgt_embedding: TokenEmbedding
) -> tuple[Encoder, Decoder]:
    """The encoder and decoder stacks; each takes its positions, then its layers (the draw order)."""
    recipe = LayerRecipe.of(args)
    encoder = Encoder(
        src_embedding,
        _positions(args),
        [recipe.encoder_layer() for _ in range(args["encoder_layers"])],
        **_stack_options(args),
    )
    decoder = Decoder(
        tgt_embedding,
        _positions(args),
        [recipe.decoder_layer() for _ in range(args["decoder_layers"])],
        **_stack_options(args),
        downsampler=MemoryDownsampler(
            args["d_model"], args["cross_downsample"], mode=args["downsample_mode"]
        ),
    )
    return encoder, decoder


def _single_stack(kind: type[AnyStack], args: dict[str, Any], embedding: TokenEmbedding) -> AnyStack:
    """The one stack of a decoder-only or encoder-only model: its positions (no cross-attention to
    give ALiBi to), then `layers` self-attention layers (the draw order)."""
    recipe = LayerRecipe.of(args)
    return kind(
        embedding,
        _positions({**args, "alibi_cross_attention": False}),
        [recipe.encoder_layer() for _ in range(args["layers"])],
        **_stack_options(args),
    )


def _stack_options(args: dict[str, Any]) -> dict[str, Any]:
    """What every stack takes besides its embedding, positions and layers."""
    return dict(
        d_model=args["d_model"],
        norm=args["norm"],
        dropout=args["dropout"],
        checkpoint_activations=args["checkpoint_activations"],
    )


def _output(args: dict[str, Any], embedding: TokenEmbedding) -> OutputProjection:
    """The projection to the target vocabulary: the target embedding's matrix when
    `share_decoder_output`, with a bias when `output_bias`."""
    return OutputProjection(
        args["d_model"],
        args["tgt_vocab_size"],
        shared_weight=embedding.weight if args["share_decoder_output"] else None,
        bias=args["output_bias"],
    )


def build_model(
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    pad_id: int = 0,
    d_model: int = 512,
    n_heads: int = 8,
    ffn_dim: int = 2048,
    encoder_layers: int = 6,
    decoder_layers: int = 6,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    activation_dropout: float = 0.0,
    positional: str = "sinusoidal",
    sinusoid_layout: str = "standard",
    position_offset: int = 0,
    alibi_cross_attention: bool = False,
    attention_backend: str = "sdpa",
    window: int | None = None,
    cross_downsample: int = 1,
    downsample_mode: str = "avg",
    norm: str = "pre",
    activation: str = "relu",
    scale_embeddings: bool = True,
    share_embeddings: bool = True,
    share_decoder_output: bool = True,
    output_bias: bool = False,
    checkpoint_activations: bool = False,
    max_positions: int = 1024,
    alignment_layer: int | None = None,
    alignment_head: int | None = None,
) -> Seq2Seq:
    """An encoder-decoder Transformer. Invalid arguments raise UserError (a ValueError).

    The defaults are configs/model/base.yaml's (tests/model/test_model_defaults.py keeps them equal).
    `share_embeddings`: encoder input, decoder input and output projection are one matrix (a joint
    vocabulary only); `share_decoder_output`: the decoder input embedding is the output projection.
    `window` limits encoder and decoder self-attention to a local band of that width.
    `scale_embeddings`: token embeddings times sqrt(d_model) (else times 1); `output_bias`: a (V,) bias
    on the logits (`output.bias`); `sinusoid_layout`: standard or fairseq frequencies; `position_offset`:
    the absolute position of each stack's first token (learned tables get max_positions + offset rows).
    `alignment_layer`, `alignment_head`: the decoder layer and cross-attention head that guided
    alignment trains on word alignments (seq2seq.train.guided_alignment) and that alignments and
    markup then read; None: no such head (alignments read a layer's mean of heads).
    """
    args = dict(locals())
    validate_arguments(args)
    check_alignment_head(args)
    src_embedding, tgt_embedding = _embeddings(args)
    encoder, decoder = _stacks(args, src_embedding, tgt_embedding)
    output = _output(args, tgt_embedding)
    return Seq2Seq(encoder, decoder, output, pad_id=pad_id, config={**args, "family": ENCODER_DECODER})


def _check_decoder_only(args: dict[str, Any]) -> None:
    """What only the decoder-only family refuses: separate vocabularies and cross-attention options."""
    if args["src_vocab_size"] != args["tgt_vocab_size"]:
        raise UserError(
            f"model=decoder_only reads source and target with one embedding, so it needs one joint "
            f"vocabulary (got {args['src_vocab_size']} and {args['tgt_vocab_size']}); "
            "set data.tokenizer.joint=true"
        )
    if args["cross_downsample"] != 1:
        raise UserError(
            f"cross_downsample={args['cross_downsample']} pools the encoder memory for cross-attention, "
            "which model=decoder_only does not have; remove it (or use an encoder-decoder model)"
        )


def build_decoder_only(
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    pad_id: int = 0,
    d_model: int = 256,
    n_heads: int = 4,
    ffn_dim: int = 1024,
    layers: int = 7,
    prefix_lm: bool = False,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    activation_dropout: float = 0.0,
    positional: str = "sinusoidal",
    sinusoid_layout: str = "standard",
    position_offset: int = 0,
    attention_backend: str = "sdpa",
    window: int | None = None,
    norm: str = "pre",
    activation: str = "relu",
    scale_embeddings: bool = True,
    share_decoder_output: bool = True,
    output_bias: bool = False,
    checkpoint_activations: bool = False,
    max_positions: int = 1024,
    cross_downsample: int = 1,
) -> DecoderOnly:
    """A decoder-only Transformer over `source <tag> target` (seq2seq.model.decoder_only).

    The defaults are configs/model/decoder_only.yaml's: 7 layers of the small encoder-decoder's width
    have its parameter count. `prefix_lm`: the source attends bidirectionally, the target causally.
    `share_decoder_output`: the input embedding is the output projection. Source and target share
    one vocabulary. `cross_downsample` exists only to be refused by name (there is no cross-attention).
    `scale_embeddings`, `output_bias`, `sinusoid_layout` and `position_offset` as in `build_model`.
    """
    args = dict(locals())
    check_positive("layers", layers)
    _check_decoder_only(args)
    validate_arguments(args)
    embedding = TokenEmbedding(tgt_vocab_size, d_model, pad_id, scale=scale_embeddings)
    stack = _single_stack(Stack, args, embedding)
    output = _output(args, embedding)
    config = {**args, "family": DECODER_ONLY}
    return DecoderOnly(stack, output, pad_id=pad_id, prefix_lm=prefix_lm, config=config)


def build_encoder_only(
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    pad_id: int = 0,
    d_model: int = 256,
    n_heads: int = 4,
    ffn_dim: int = 1024,
    layers: int = 3,
    outputs: int = 1,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    activation_dropout: float = 0.0,
    positional: str = "sinusoidal",
    sinusoid_layout: str = "standard",
    position_offset: int = 0,
    attention_backend: str = "sdpa",
    window: int | None = None,
    norm: str = "pre",
    activation: str = "relu",
    scale_embeddings: bool = True,
    checkpoint_activations: bool = False,
    max_positions: int = 512,
) -> EncoderOnly:
    """An encoder-only Transformer over `source </s> translation </s>` with a pooled head of `outputs`
    numbers (seq2seq.model.encoder_only). The defaults are configs/model/encoder_only.yaml's.

    Source and translation keep their own vocabularies: one embedding table of src_vocab_size +
    tgt_vocab_size rows, the translation's ids shifted by src_vocab_size. `max_positions` bounds a
    source and its translation together. `scale_embeddings`, `sinusoid_layout` and `position_offset` as
    in `build_model` (there is no output projection, so no `output_bias`).
    """
    args = dict(locals())
    check_positive("layers", layers)
    check_positive("outputs", outputs)
    validate_arguments(args)
    embedding = TokenEmbedding(src_vocab_size + tgt_vocab_size, d_model, pad_id, scale=scale_embeddings)
    encoder = _single_stack(Encoder, args, embedding)
    config = {**args, "family": ENCODER_ONLY}
    return EncoderOnly(encoder, outputs=outputs, dropout=dropout, pad_id=pad_id, config=config)


# The builder of each family, by the name its checkpoints record (model.config["family"]); a checkpoint
# without one is an encoder-decoder (they were the only family before the name was recorded).
FAMILY_BUILDERS = {
    ENCODER_DECODER: build_model,
    DECODER_ONLY: build_decoder_only,
    ENCODER_ONLY: build_encoder_only,
}


def family_of(config: dict[str, Any]) -> str:
    """The family a model config or checkpoint's model_config describes."""
    family = config.get("family", ENCODER_DECODER)
    if family not in FAMILY_BUILDERS:
        raise UserError(
            f"model family {family!r} is not known to this version; "
            f"choose one of {', '.join(FAMILY_BUILDERS)} (or upgrade seq2seq)"
        )
    return family


def build_from_config(config: dict[str, Any]) -> nn.Module:
    """Rebuild a model from its saved `config` (a checkpoint's model_config), whatever its family."""
    builder = FAMILY_BUILDERS[family_of(config)]
    return builder(**{key: value for key, value in config.items() if key != "family"})


def count_parameters(model: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of distinct parameters (shared embeddings counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)

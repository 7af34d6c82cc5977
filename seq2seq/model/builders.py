"""Builder functions: the one place where modules are wired together from explicit arguments."""

from __future__ import annotations

from typing import Any

from torch import nn

from seq2seq.errors import UserError
from seq2seq.model.transformer import POSITIONAL_KINDS, Decoder, Encoder, PositionScheme, Seq2Seq
from seq2seq.nn.backends import BACKENDS, xformers_installed
from seq2seq.nn.embeddings import OutputProjection, TokenEmbedding
from seq2seq.nn.layers import (
    ACTIVATIONS,
    DOWNSAMPLE_MODES,
    NORMS,
    DecoderLayer,
    EncoderLayer,
    MemoryDownsampler,
)

# Named sizes. "base" and "big" follow Vaswani et al. (2017); "tiny" is for tests and smoke runs.
SIZES: dict[str, dict[str, int]] = {
    "tiny": dict(d_model=64, n_heads=4, ffn_dim=256, encoder_layers=2, decoder_layers=2),
    "small": dict(d_model=256, n_heads=4, ffn_dim=1024, encoder_layers=3, decoder_layers=3),
    "base": dict(d_model=512, n_heads=8, ffn_dim=2048, encoder_layers=6, decoder_layers=6),
    "big": dict(d_model=1024, n_heads=16, ffn_dim=4096, encoder_layers=6, decoder_layers=6),
}


def _check_choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise UserError(f"{name}={value!r} is not supported; choose one of {', '.join(map(str, allowed))}")


def _check_positive(name: str, value: Any, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UserError(f"{name}={value!r} must be a positive integer{' or None' if allow_none else ''}")


def validate_arguments(args: dict[str, Any]) -> None:
    """Reject impossible settings with one-line messages before any module is built."""
    for name in (
        "src_vocab_size",
        "tgt_vocab_size",
        "d_model",
        "n_heads",
        "ffn_dim",
        "encoder_layers",
        "decoder_layers",
        "cross_downsample",
        "max_positions",
    ):
        _check_positive(name, args[name])
    _check_positive("window", args["window"], allow_none=True)
    if args["d_model"] % args["n_heads"]:
        raise UserError(f"n_heads={args['n_heads']} must divide d_model={args['d_model']}")
    _check_choice("positional", args["positional"], POSITIONAL_KINDS)
    _check_choice("attention", args["attention"], BACKENDS)
    _check_choice("norm", args["norm"], NORMS)
    _check_choice("activation", args["activation"], ACTIVATIONS)
    _check_choice("downsample_mode", args["downsample_mode"], DOWNSAMPLE_MODES)
    for name in ("dropout", "attention_dropout", "activation_dropout"):
        if not 0.0 <= float(args[name]) < 1.0:
            raise UserError(f"{name}={args[name]!r} must be in [0, 1)")
    if not 0 <= args["pad_id"] < min(args["src_vocab_size"], args["tgt_vocab_size"]):
        raise UserError(f"pad_id={args['pad_id']} must be a valid token id (0 <= pad_id < vocab size)")
    if args["positional"] == "rope" and (args["d_model"] // args["n_heads"]) % 2:
        raise UserError("positional='rope' needs an even head dimension (d_model / n_heads)")
    if args["attention"] == "xformers" and not xformers_installed():
        raise UserError(
            "attention='xformers' requested but xformers is not installed; "
            "pip install 'seq2seq[xformers]' or choose attention='sdpa'"
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
    alibi_cross_attention: bool = False,
    attention: str = "sdpa",
    window: int | None = None,
    cross_downsample: int = 1,
    downsample_mode: str = "avg",
    norm: str = "pre",
    activation: str = "relu",
    tie_embeddings: bool = True,
    checkpoint_activations: bool = False,
    max_positions: int = 1024,
) -> Seq2Seq:
    """An encoder-decoder Transformer. Invalid arguments raise UserError (a ValueError).

    `tie_embeddings` shares the decoder input and output embeddings, and also the encoder's when
    source and target vocabularies have the same size (a joint vocabulary).
    `window` limits encoder and decoder self-attention to a local band of that width.
    """
    args = dict(locals())
    validate_arguments(args)
    layer_args = dict(
        dropout=dropout,
        attention_dropout=attention_dropout,
        activation_dropout=activation_dropout,
        activation=activation,
        norm=norm,
        backend=attention,
        window=window,
    )
    stack_args = dict(
        d_model=d_model, norm=norm, dropout=dropout, checkpoint_activations=checkpoint_activations
    )

    def positions() -> PositionScheme:
        return PositionScheme(
            positional,
            d_model=d_model,
            n_heads=n_heads,
            max_positions=max_positions,
            alibi_cross=alibi_cross_attention,
        )

    tgt_embedding = TokenEmbedding(tgt_vocab_size, d_model, pad_id)
    joint = tie_embeddings and src_vocab_size == tgt_vocab_size
    src_embedding = tgt_embedding if joint else TokenEmbedding(src_vocab_size, d_model, pad_id)
    encoder = Encoder(
        src_embedding,
        positions(),
        [EncoderLayer(d_model, n_heads, ffn_dim, **layer_args) for _ in range(encoder_layers)],
        **stack_args,
    )
    decoder = Decoder(
        tgt_embedding,
        positions(),
        [DecoderLayer(d_model, n_heads, ffn_dim, **layer_args) for _ in range(decoder_layers)],
        **stack_args,
        downsampler=MemoryDownsampler(d_model, cross_downsample, mode=downsample_mode),
    )
    output = OutputProjection(
        d_model, tgt_vocab_size, shared_weight=tgt_embedding.weight if tie_embeddings else None
    )
    return Seq2Seq(encoder, decoder, output, pad_id=pad_id, config=args)


def count_parameters(model: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of distinct parameters (shared embeddings counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)

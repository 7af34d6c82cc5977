"""Export a checkpoint to CTranslate2: our weights placed into CTranslate2's own model specs.

CTranslate2 runs the exported model in C++ (fp32, int8, bf16 on CPUs and GPUs). An encoder-decoder
becomes a TransformerSpec (run by its Translator), a decoder-only model a TransformerDecoderModelSpec
(run by its Generator); the checkpoint's recorded family picks which. Our layout maps onto both
directly: fused QKV (self-attention) and Q + fused KV (cross-attention) projections, one layer norm
per sublayer (pre- or post-norm), relu / gelu / SiLU (Marian's "swish") / SwiGLU feed-forward,
embeddings scaled by sqrt(d_model) or not (`scale_embeddings`), absolute positions written out as a
table (row t = the position of column t: the offset and sinusoid layout applied), RoPE with the
rotate-half layout, ALiBi (decoders only), an output projection with or without a bias. The special
tokens are the target tokenizer's pieces: its bos starts the decoder (pad for MarianMT, eos for
M2M100), with its eos and unk; a language code is part of the encoded source, or the target prefix
the engine forces. A decoder-only model's layers are our encoder layers, so both families fill them
with the same code. What a spec cannot express is refused, by name, before anything is written.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.checkpoint import load_checkpoint, model_weights, save_checkpoint
from seq2seq.errors import UserError, warn_renamed_keyword
from seq2seq.files import temporary_path
from seq2seq.inference.api import (
    FORMAT,
    JOINT_TOKENIZER,
    METADATA_FILE,
    PAYLOAD_KEY,
    SOURCE_TOKENIZER,
    TARGET_TOKENIZER,
    TORCH_WEIGHTS_FILE,
    VERSION,
    LoadedModel,
    Shortlist,
    import_ctranslate2,
    load_for_inference,
)
from seq2seq.model import DECODER_ONLY, ENCODER_DECODER, family_of

log = logging.getLogger(__name__)

WEIGHT_FORMATS = ("float32", "int8", "int8_float32", "bfloat16")  # CTranslate2's stored weight types
LAYER_NORM_EPSILON = 1e-5  # torch.nn.LayerNorm's default, which every norm of our model uses


@dataclass(frozen=True)
class _Family:
    """How one model family exports: its spec builder, the positional schemes that spec expresses (a
    scheme added to our models later is refused until its mapping is written), its own refusals."""

    name: str
    spec: Callable[[LoadedModel, Any], Any]
    positional: tuple[str, ...]
    problems: Callable[[dict[str, Any]], list[str]]


def _common_problems(config: dict[str, Any]) -> list[str]:
    """What neither spec expresses: local windows, pooled cross-attention memory."""
    problems = []
    if config.get("window") is not None:
        problems.append(f"model.window={config['window']} (local self-attention windows)")
    if int(config.get("cross_downsample", 1)) != 1:
        problems.append(
            f"model.cross_downsample={config['cross_downsample']} (pooled cross-attention memory)"
        )
    return problems


def _decoder_only_problems(config: dict[str, Any]) -> list[str]:
    """CTranslate2's decoder-only models are causal throughout: no bidirectional source prefix."""
    if config.get("prefix_lm"):
        return ["model.prefix_lm=true (bidirectional attention over the source; its decoders are causal)"]
    return []


def unsupported_settings(config: dict[str, Any]) -> list[str]:
    """The settings of `config` (a checkpoint's model_config) that CTranslate2 cannot express."""
    family = FAMILIES[family_of(config)]
    problems = []
    positional = config.get("positional", "sinusoidal")
    if positional not in family.positional:
        supported = " / ".join(family.positional)
        problems.append(f"model.positional={positional} (its {family.name} spec takes {supported} positions)")
    return problems + _common_problems(config) + family.problems(config)


def export_ctranslate2(
    checkpoint: Path,
    output: Path,
    *,
    weight_format: str | None = None,
    force: bool = False,
    shortlist: Path | None = None,
    torch_weights: bool = True,
    quantization: str | None = None,
    languages: tuple[str, str] | None = None,
) -> Path:
    """Write `output` (a new directory): CTranslate2's model files, our tokenizers and seq2seq.json.
    `weight_format`: the type CTranslate2 stores the weights in (WEIGHT_FORMATS, default float32; int8:
    about a third of the size); `quantization`: its old name, accepted (with a DeprecationWarning) until
    the next release.
    `shortlist` (a file written by seq2seq-shortlist for this checkpoint) also writes it as CTranslate2's
    vocabulary map, vmap.txt, which the engine then uses (`use_vmap`); encoder-decoder models only.
    `torch_weights` also writes the model's weights as a seq2seq checkpoint (pytorch.pt, no optimizer
    state): sentences with constraints, which CTranslate2 cannot search, are translated on them.
    `languages`: the (source, target) pair the metadata records (default: the one the checkpoint's training
    recorded, if any), as a server lists and routes the model by it."""
    weight_format = _weight_format(weight_format, quantization)
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    problems = unsupported_settings(loaded.model.config)
    if problems:
        raise UserError(f"CTranslate2 cannot express {problems[0]}; export a model trained without it")
    if output.exists() and any(output.iterdir()) and not force:
        raise UserError(
            f"{output} exists and is not empty; pass force=true to replace it or choose another output"
        )
    ctranslate2 = import_ctranslate2()
    family = family_of(loaded.model.config)
    spec = FAMILIES[family].spec(loaded, ctranslate2)
    temporary = temporary_path(output)
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        vmap = None
        if shortlist is not None:
            handle, vmap = tempfile.mkstemp(suffix=".vmap.txt")
            os.close(handle)
            write_vocabulary_map(shortlist, loaded, family, Path(vmap))
        try:
            _SpecConverter(spec).convert(str(temporary), vmap=vmap, quantization=weight_format, force=True)
        finally:
            if vmap is not None:
                Path(vmap).unlink(missing_ok=True)
        if torch_weights:
            _write_torch_weights(checkpoint, temporary / TORCH_WEIGHTS_FILE)
        version = ctranslate2.__version__
        _write_tokenizers_and_metadata(
            temporary, loaded, weight_format, version, torch_weights, languages or recorded_languages(loaded)
        )
        if output.exists():
            shutil.rmtree(output)
        os.replace(temporary, output)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return output


def _weight_format(weight_format: str | None, quantization: str | None) -> str:
    """`weight_format` (default float32), or the deprecated `quantization` with one warning."""
    if quantization is not None:
        if weight_format is not None:
            raise UserError("quantization= and weight_format= are the same setting; pass weight_format= only")
        warn_renamed_keyword("quantization", "weight_format", depth=2)  # at export_ctranslate2's caller
        weight_format = quantization
    weight_format = "float32" if weight_format is None else weight_format
    if weight_format not in WEIGHT_FORMATS:
        raise UserError(
            f"weight_format={weight_format!r} is not supported; choose {', '.join(WEIGHT_FORMATS)}"
        )
    return weight_format


def write_vocabulary_map(shortlist: Path, loaded: Any, family: str, path: Path) -> None:
    """Our shortlist as CTranslate2's vocabulary map at `path`: a line per source piece, its candidate
    target pieces after a tab, and a first line with an empty source for the tokens always kept. A piece
    holding whitespace (possible only for user-defined symbols) cannot be written there and is left out."""
    if family != ENCODER_DECODER:
        raise UserError(f"shortlist= exports a vocabulary map for encoder-decoder models only, not {family}; "
                        "export this model without it")  # fmt: skip
    models = (loaded.src_tokenizer.to_bytes(), loaded.tgt_tokenizer.to_bytes())
    table = Shortlist.load(shortlist, src_model=models[0], tgt_model=models[1])
    if table.languages is not None:
        raise UserError(f"shortlist= of a multilingual model serves one direction ({'->'.join(table.languages)}), "
                        "but CTranslate2 applies its vocabulary map to every direction; export without "
                        "shortlist=, and use seq2seq-translate engine=torch shortlist= per direction")  # fmt: skip
    src_pieces = loaded.src_tokenizer.pieces_of_vocabulary()
    tgt_pieces = loaded.tgt_tokenizer.pieces_of_vocabulary()

    def writable(pieces: list[str]) -> list[str]:
        return [piece for piece in pieces if piece and not any(c.isspace() for c in piece)]

    always = torch.cat([table.frequent, table.always]).tolist()
    lines = ["\t" + " ".join(writable([tgt_pieces[i] for i in always]))]
    for source, row in enumerate(table.table.tolist()):
        targets = writable([tgt_pieces[t] for t in row if t >= 0])
        if targets and writable([src_pieces[source]]):
            lines.append(src_pieces[source] + "\t" + " ".join(targets))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


class _SpecConverter:
    """ctranslate2.converters.Converter for a spec built in memory (its `_load` returns the spec)."""

    def __new__(cls, spec: Any) -> Any:
        converters = import_ctranslate2().converters

        class Converter(converters.Converter):
            def _load(self) -> Any:
                return spec

        return Converter()


def _numpy_state(model: Any) -> dict[str, Any]:
    """The weights as numpy arrays, and with sinusoidal positions each stack's sinusoids as the model itself
    computes them (its layout and offset applied), `<stack>.positions.absolute.sinusoids`: row t holds
    column t's position, for every position the model holds. CTranslate2 stores them as weights."""
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    if model.config.get("positional") == "sinusoidal":
        columns = torch.arange(int(model.config["max_positions"]))
        for name, module in model.named_modules(remove_duplicate=False):  # a shared one: each name
            if name.endswith("positions.absolute"):
                state[f"{name}.sinusoids"] = module(columns).numpy()  # (max_positions, D)
    return state


def _stack_options(config: dict[str, Any], specs: Any) -> dict[str, Any]:
    """The spec arguments every stack of ours shares: norm placement, activation, rotary layout."""
    activation = {
        "relu": specs.Activation.RELU,
        "gelu": specs.Activation.GELU,
        "silu": specs.Activation.SWISH,  # x * sigmoid(x), without a gate
        "swiglu": specs.Activation.SWISH,  # with ffn_glu: silu(gate) * value
    }
    head_dim = config["d_model"] // config["n_heads"]
    return dict(
        pre_norm=config["norm"] == "pre",
        activation=activation[config["activation"]],
        ffn_glu=config["activation"] == "swiglu",
        rotary_dim=head_dim if config["positional"] == "rope" else None,
        rotary_interleave=False,
    )


def transformer_spec(loaded: LoadedModel, ctranslate2: Any) -> Any:
    """CTranslate2's TransformerSpec holding the weights of `loaded.model` (an encoder-decoder)."""
    specs = ctranslate2.specs
    config, state = loaded.model.config, _numpy_state(loaded.model)
    common = _stack_options(config, specs)
    encoder = specs.TransformerEncoderSpec(config["encoder_layers"], config["n_heads"], **common)
    decoder = specs.TransformerDecoderSpec(
        config["decoder_layers"], config["n_heads"], **common, **_alignment_head(config)
    )
    _fill_encoder(encoder, state, config)
    _fill_decoder(decoder, state, config)
    spec = specs.TransformerSpec(encoder, decoder)
    spec.config.layer_norm_epsilon = LAYER_NORM_EPSILON
    spec.config.add_source_eos = True  # our encoder reads tokens + eos
    _special_tokens(spec.config, loaded.tgt_tokenizer)
    spec.config.decoder_start_token = spec.config.bos_token  # the token our decoder starts from
    spec.register_source_vocabulary(loaded.src_tokenizer.pieces_of_vocabulary())
    spec.register_target_vocabulary(loaded.tgt_tokenizer.pieces_of_vocabulary())
    return spec


def _alignment_head(config: dict[str, Any]) -> dict[str, int]:
    """Where CTranslate2's `return_attention` reads: the mean of the first `alignment_heads` heads of
    decoder layer `alignment_layer`. A model trained with guided alignment (model.alignment_layer,
    alignment_head) gets its head there when it is head 0, which guided training picks by default."""
    layer, head = config.get("alignment_layer"), config.get("alignment_head")
    if layer is None or head is None:
        return {}
    layer = int(layer) % int(config["decoder_layers"])
    if int(head) % int(config["n_heads"]) != 0:
        log.warning("CTranslate2's return_attention reads head 0 of layer %d, not the alignment head %s",
                    layer, head)  # fmt: skip
        return {"alignment_layer": layer}
    return {"alignment_layer": layer, "alignment_heads": 1}


def decoder_only_spec(loaded: LoadedModel, ctranslate2: Any) -> Any:
    """CTranslate2's TransformerDecoderModelSpec holding the weights of `loaded.model` (decoder-only).

    ALiBi: CTranslate2 adds slope * (j - last key) to the already scaled scores (scale_alibi off);
    under a causal mask that differs from our -slope * |i - j| by a constant per query, which softmax
    ignores. Its slopes are the paper's, as ours.
    """
    specs = ctranslate2.specs
    config, state = loaded.model.config, _numpy_state(loaded.model)
    spec = specs.TransformerDecoderModelSpec.from_config(
        config["layers"], config["n_heads"], **_stack_options(config, specs),
        alibi=config["positional"] == "alibi", alibi_use_positive_positions=False, scale_alibi=False,
    )  # fmt: skip
    decoder = spec.decoder
    decoder.embeddings.weight = state["stack.embedding.weight"]
    _fill_projection(decoder.projection, state)
    _fill_stack(decoder, state, config, "stack")
    _fill_self_attention_layers(decoder.layer, state, config, "stack")
    spec.config.layer_norm_epsilon = LAYER_NORM_EPSILON
    _special_tokens(spec.config, loaded.tgt_tokenizer)
    spec.register_vocabulary(loaded.tgt_tokenizer.pieces_of_vocabulary())
    return spec


def _special_tokens(config: Any, tokenizer: Any) -> None:
    """The spec's bos, eos and unk tokens: the pieces of the tokenizer's ids (ours: <s>, </s>, <unk>)."""
    config.bos_token = tokenizer.id_to_piece(tokenizer.bos_id)
    config.eos_token = tokenizer.id_to_piece(tokenizer.eos_id)
    config.unk_token = tokenizer.id_to_piece(tokenizer.unk_id)


def _fill_projection(spec: Any, state: dict) -> None:
    """The output projection, and its bias when the model has one (`output_bias`)."""
    spec.weight = state["output.weight"]
    if "output.bias" in state:
        spec.bias = state["output.bias"]


def _fill_encoder(spec: Any, state: dict, config: dict) -> None:
    spec.embeddings[0].weight = state["encoder.embedding.weight"]
    _fill_stack(spec, state, config, "encoder")
    _fill_self_attention_layers(spec.layer, state, config, "encoder")


def _fill_self_attention_layers(layers: list, state: dict, config: dict, stack: str) -> None:
    """Our EncoderLayers (self-attention + feed-forward) into CTranslate2 layer specs: an encoder's, or
    the layers of a decoder without encoder attention (a decoder-only model)."""
    for index, layer in enumerate(layers):
        prefix = f"{stack}.layers.{index}"
        _attention(layer.self_attention, state, [f"{prefix}.self_attn.{n}" for n in ("qkv", "out")],
                   f"{prefix}.attn_block.norm")  # fmt: skip
        _feed_forward(layer.ffn, state, prefix, config)


def _fill_decoder(spec: Any, state: dict, config: dict) -> None:
    spec.embeddings.weight = state["decoder.embedding.weight"]
    _fill_projection(spec.projection, state)
    _fill_stack(spec, state, config, "decoder")
    for index, layer in enumerate(spec.layer):
        prefix = f"decoder.layers.{index}"
        _attention(layer.self_attention, state, [f"{prefix}.self_attn.{n}" for n in ("qkv", "out")],
                   f"{prefix}.self_block.norm")  # fmt: skip
        _attention(layer.attention, state, [f"{prefix}.cross_attn.{n}" for n in ("q", "kv", "out")],
                   f"{prefix}.cross_block.norm")  # fmt: skip
        _feed_forward(layer.ffn, state, prefix, config)


def _fill_stack(spec: Any, state: dict, config: dict, stack: str) -> None:
    """Embedding scale, positions and, for pre-norm, the final layer norm of the encoder or decoder."""
    spec.scale_embeddings = bool(config.get("scale_embeddings", True))  # True: times sqrt(d_model)
    _fill_positions(spec, state, config, stack)
    if config["norm"] == "pre":
        _norm(spec.layer_norm, state, f"{stack}.final_norm")


def _attention(spec: Any, state: dict, linears: list[str], norm: str) -> None:
    """Fused projections in CTranslate2's order (self: QKV, out; cross: Q, KV, out), and the norm."""
    for linear, name in zip(spec.linear, linears):
        _linear(linear, state, name)
    _norm(spec.layer_norm, state, norm)


def _fill_positions(spec: Any, state: dict, config: dict, stack: str) -> None:
    """Absolute positions as an explicit table whose row t is column t's position (t + position_offset):
    learned, or the sinusoids the model computes in its layout (_numpy_state); none for RoPE."""
    offset, rows = int(config.get("position_offset", 0)), int(config["max_positions"])
    if config["positional"] == "learned":
        table = state[f"{stack}.positions.absolute.table.weight"]  # (offset + rows, D)
        spec.position_encodings.encodings = table[offset : offset + rows]
    elif config["positional"] == "sinusoidal":
        spec.position_encodings.encodings = state[f"{stack}.positions.absolute.sinusoids"]  # (rows, D)
    elif hasattr(spec, "position_encodings"):  # RoPE: none (else CTranslate2 adds sinusoids)
        del spec.position_encodings


def _feed_forward(spec: Any, state: dict, prefix: str, config: dict) -> None:
    _norm(spec.layer_norm, state, f"{prefix}.ffn_block.norm")
    up_weight, up_bias = state[f"{prefix}.ffn.up.weight"], state[f"{prefix}.ffn.up.bias"]
    if config["activation"] == "swiglu":  # up = [gate; value]: silu(gate) * value
        half = up_weight.shape[0] // 2
        spec.linear_0.weight, spec.linear_0.bias = up_weight[:half], up_bias[:half]
        spec.linear_0_noact.weight, spec.linear_0_noact.bias = up_weight[half:], up_bias[half:]
    else:
        spec.linear_0.weight, spec.linear_0.bias = up_weight, up_bias
    _linear(spec.linear_1, state, f"{prefix}.ffn.down")


def _linear(spec: Any, state: dict, name: str) -> None:
    spec.weight, spec.bias = state[f"{name}.weight"], state[f"{name}.bias"]


def _norm(spec: Any, state: dict, name: str) -> None:
    spec.gamma, spec.beta = state[f"{name}.weight"], state[f"{name}.bias"]


def recorded_languages(loaded: LoadedModel) -> tuple[str, str] | None:
    """The (source, target) language of a checkpoint's training config (data.src_lang, data.tgt_lang)."""
    data = loaded.config.get("data") or {}
    if data.get("src_lang") and data.get("tgt_lang"):
        return str(data["src_lang"]), str(data["tgt_lang"])
    return None


def _write_torch_weights(checkpoint: Path, path: Path) -> None:
    """What loading a model for inference reads from `checkpoint` (weights, settings, tokenizers, step,
    tuned decoding), without the optimizer state, as a checkpoint file."""
    payload = load_checkpoint(checkpoint, map_location="cpu", mmap=True)
    kept = ("model_config", "tokenizer", "step", "config", PAYLOAD_KEY)
    weights = model_weights(payload)  # a LoRA run's adapters merged, as load_for_inference merges them
    save_checkpoint(path, {"model": weights, **{key: payload[key] for key in kept if key in payload}})


def _write_tokenizers_and_metadata(
    directory: Path, loaded: LoadedModel, weight_format: str, version: str, torch_weights: bool = False,
    languages: tuple[str, str] | None = None,
) -> None:  # fmt: skip
    joint = loaded.src_tokenizer is loaded.tgt_tokenizer
    if joint:
        loaded.src_tokenizer.save(directory / JOINT_TOKENIZER)
    else:
        loaded.src_tokenizer.save(directory / SOURCE_TOKENIZER)
        loaded.tgt_tokenizer.save(directory / TARGET_TOKENIZER)
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "family": family_of(loaded.model.config),
        "joint": joint,
        "step": loaded.step,
        "weight_format": weight_format,
        "max_positions": int(loaded.model.config.get("max_positions", 1024)),
        "ctranslate2": version,
        "model_config": loaded.model.config,
        "torch_weights": TORCH_WEIGHTS_FILE if torch_weights else None,
    }
    if loaded.tuned_decoding is not None:  # the model's own tuned search settings travel with it
        metadata[PAYLOAD_KEY] = loaded.tuned_decoding
    if languages is not None:
        metadata["languages"] = list(languages)
    (directory / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")


FAMILIES = {  # CTranslate2 has ALiBi in decoders only, so an encoder-decoder cannot have it
    ENCODER_DECODER: _Family(
        "encoder-decoder", transformer_spec, ("sinusoidal", "learned", "rope"), lambda config: []
    ),
    DECODER_ONLY: _Family(
        "decoder-only", decoder_only_spec, ("sinusoidal", "learned", "rope", "alibi"), _decoder_only_problems
    ),
}

"""Export a checkpoint to CTranslate2: our weights placed into CTranslate2's own TransformerSpec.

CTranslate2 runs the exported model in C++ (fp32, int8, bf16 on CPUs and GPUs). Our layout maps onto
its spec directly: fused QKV (self-attention) and Q + fused KV (cross-attention) projections, one
layer norm per sublayer (pre- or post-norm), relu / gelu / SwiGLU feed-forward, embeddings scaled by
sqrt(d_model), absolute positions written out as a table, RoPE with the rotate-half layout, an output
projection without bias. What the spec cannot express is refused, by name, before anything is written.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from seq2seq.decode.engines import import_ctranslate2
from seq2seq.decode.exported import (
    FORMAT,
    JOINT_TOKENIZER,
    METADATA_FILE,
    SOURCE_TOKENIZER,
    TARGET_TOKENIZER,
    VERSION,
)
from seq2seq.decode.loading import LoadedModel, load_for_inference
from seq2seq.decode.tuned import PAYLOAD_KEY
from seq2seq.errors import UserError
from seq2seq.files import temporary_path
from seq2seq.nn.positional import sinusoid_table

QUANTIZATIONS = ("float32", "int8", "int8_float32", "bfloat16")
LAYER_NORM_EPSILON = 1e-5  # torch.nn.LayerNorm's default, which every norm of our model uses


def unsupported_settings(config: dict[str, Any]) -> list[str]:
    """The settings of `config` (a checkpoint's model_config) that CTranslate2 cannot express."""
    problems = []
    if config.get("positional") == "alibi":
        problems.append("model.positional=alibi (CTranslate2 has ALiBi in decoders only, not in the encoder)")
    if config.get("window") is not None:
        problems.append(f"model.window={config['window']} (local self-attention windows)")
    if int(config.get("cross_downsample", 1)) != 1:
        problems.append(
            f"model.cross_downsample={config['cross_downsample']} (pooled cross-attention memory)"
        )
    return problems


def export_ctranslate2(
    checkpoint: Path, output: Path, *, quantization: str = "float32", force: bool = False
) -> Path:
    """Write `output` (a new directory): CTranslate2's model files, our tokenizers and seq2seq.json."""
    if quantization not in QUANTIZATIONS:
        raise UserError(f"quantization={quantization!r} is not supported; choose {', '.join(QUANTIZATIONS)}")
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    problems = unsupported_settings(loaded.model.config)
    if problems:
        raise UserError(f"CTranslate2 cannot express {problems[0]}; export a model trained without it")
    if output.exists() and any(output.iterdir()) and not force:
        raise UserError(
            f"{output} exists and is not empty; pass force=true to replace it or choose another output"
        )
    ctranslate2 = import_ctranslate2()
    spec = transformer_spec(loaded, ctranslate2)
    temporary = temporary_path(output)
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        _SpecConverter(spec).convert(str(temporary), quantization=quantization, force=True)
        _write_tokenizers_and_metadata(temporary, loaded, quantization, ctranslate2.__version__)
        if output.exists():
            shutil.rmtree(output)
        os.replace(temporary, output)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return output


class _SpecConverter:
    """ctranslate2.converters.Converter for a spec built in memory (its `_load` returns the spec)."""

    def __new__(cls, spec: Any) -> Any:
        converters = import_ctranslate2().converters

        class Converter(converters.Converter):
            def _load(self) -> Any:
                return spec

        return Converter()


def transformer_spec(loaded: LoadedModel, ctranslate2: Any) -> Any:
    """CTranslate2's TransformerSpec holding the weights of `loaded.model`."""
    specs = ctranslate2.specs
    config, state = (
        loaded.model.config,
        {k: v.detach().float().numpy() for k, v in loaded.model.state_dict().items()},
    )
    head_dim = config["d_model"] // config["n_heads"]
    rotary = head_dim if config["positional"] == "rope" else None
    activation = {
        "relu": specs.Activation.RELU,
        "gelu": specs.Activation.GELU,
        "swiglu": specs.Activation.SWISH,
    }
    common = dict(
        pre_norm=config["norm"] == "pre",
        activation=activation[config["activation"]],
        ffn_glu=config["activation"] == "swiglu",
        rotary_dim=rotary,
        rotary_interleave=False,
    )
    encoder = specs.TransformerEncoderSpec(config["encoder_layers"], config["n_heads"], **common)
    decoder = specs.TransformerDecoderSpec(config["decoder_layers"], config["n_heads"], **common)
    _fill_encoder(encoder, state, config)
    _fill_decoder(decoder, state, config)
    spec = specs.TransformerSpec(encoder, decoder)
    spec.config.layer_norm_epsilon = LAYER_NORM_EPSILON
    spec.config.add_source_eos = True  # our encoder reads tokens + eos
    spec.register_source_vocabulary(loaded.src_tokenizer.pieces_of_vocabulary())
    spec.register_target_vocabulary(loaded.tgt_tokenizer.pieces_of_vocabulary())
    return spec


def _fill_encoder(spec: Any, state: dict, config: dict) -> None:
    spec.embeddings[0].weight = state["encoder.embedding.weight"]
    _fill_stack(spec, state, config, "encoder")
    for index, layer in enumerate(spec.layer):
        prefix = f"encoder.layers.{index}"
        _attention(layer.self_attention, state, [f"{prefix}.self_attn.{n}" for n in ("qkv", "out")],
                   f"{prefix}.attn_block.norm")  # fmt: skip
        _feed_forward(layer.ffn, state, prefix, config)


def _fill_decoder(spec: Any, state: dict, config: dict) -> None:
    spec.embeddings.weight = state["decoder.embedding.weight"]
    spec.projection.weight = state["output.weight"]
    _fill_stack(spec, state, config, "decoder")
    for index, layer in enumerate(spec.layer):
        prefix = f"decoder.layers.{index}"
        _attention(layer.self_attention, state, [f"{prefix}.self_attn.{n}" for n in ("qkv", "out")],
                   f"{prefix}.self_block.norm")  # fmt: skip
        _attention(layer.attention, state, [f"{prefix}.cross_attn.{n}" for n in ("q", "kv", "out")],
                   f"{prefix}.cross_block.norm")  # fmt: skip
        _feed_forward(layer.ffn, state, prefix, config)


def _fill_stack(spec: Any, state: dict, config: dict, stack: str) -> None:
    """Positions and, for pre-norm, the final layer norm of the encoder or decoder."""
    _fill_positions(spec, state, config, stack)
    if config["norm"] == "pre":
        _norm(spec.layer_norm, state, f"{stack}.final_norm")


def _attention(spec: Any, state: dict, linears: list[str], norm: str) -> None:
    """Fused projections in CTranslate2's order (self: QKV, out; cross: Q, KV, out), and the norm."""
    for linear, name in zip(spec.linear, linears):
        _linear(linear, state, name)
    _norm(spec.layer_norm, state, norm)


def _fill_positions(spec: Any, state: dict, config: dict, stack: str) -> None:
    """Absolute positions as an explicit table (learned, or the sinusoids we compute); none for RoPE."""
    if config["positional"] == "learned":
        spec.position_encodings.encodings = state[f"{stack}.positions.absolute.table.weight"]
    elif config["positional"] == "sinusoidal":
        positions = torch.arange(config["max_positions"])
        spec.position_encodings.encodings = sinusoid_table(positions, config["d_model"]).numpy()
    elif hasattr(spec, "position_encodings"):  # RoPE: no absolute positions (else CTranslate2 adds sinusoids)
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


def _write_tokenizers_and_metadata(
    directory: Path, loaded: LoadedModel, quantization: str, version: str
) -> None:
    joint = loaded.src_tokenizer is loaded.tgt_tokenizer
    if joint:
        loaded.src_tokenizer.save(directory / JOINT_TOKENIZER)
    else:
        loaded.src_tokenizer.save(directory / SOURCE_TOKENIZER)
        loaded.tgt_tokenizer.save(directory / TARGET_TOKENIZER)
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "joint": joint,
        "step": loaded.step,
        "quantization": quantization,
        "max_positions": int(loaded.model.config.get("max_positions", 1024)),
        "ctranslate2": version,
        "model_config": loaded.model.config,
    }
    if loaded.decoding is not None:  # the model's own tuned search settings travel with it
        metadata[PAYLOAD_KEY] = loaded.decoding
    (directory / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")

"""The builders' argument checks: impossible or contradictory model settings, each refused with a
one-line UserError naming the setting and the fix, before any module is built."""

from __future__ import annotations

from typing import Any

from seq2seq.errors import UserError
from seq2seq.model.transformer import POSITIONAL_KINDS
from seq2seq.nn.backends import ATTENTION_BACKENDS, xformers_installed
from seq2seq.nn.layers import ACTIVATIONS, DOWNSAMPLE_MODES, NORMS
from seq2seq.nn.positional import SINUSOID_LAYOUTS

_POSITIVE_INTEGERS = (
    "src_vocab_size",
    "tgt_vocab_size",
    "d_model",
    "n_heads",
    "ffn_dim",
    "encoder_layers",
    "decoder_layers",
    "cross_downsample",
    "max_positions",
)
_SWITCHES = ("scale_embeddings", "output_bias")  # true or false, nothing else


def check_choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise UserError(f"{name}={value!r} is not supported; choose one of {', '.join(map(str, allowed))}")


def check_positive(name: str, value: Any, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UserError(f"{name}={value!r} must be a positive integer{' or None' if allow_none else ''}")


def check_embedding_sharing(share_embeddings: bool, *, joint_vocabulary: bool) -> None:
    """Refuse `share_embeddings` for separate source and target vocabularies (even of equal size:
    the same id would mean two different pieces). The train CLI calls this with the tokenizer's setting."""
    if share_embeddings and not joint_vocabulary:
        raise UserError(
            "model.share_embeddings=true needs one joint vocabulary for source and target; "
            "set data.tokenizer.joint=true or model.share_embeddings=false"
        )


def _check_sharing(args: dict[str, Any]) -> None:
    if not args["share_embeddings"]:
        return
    if args["src_vocab_size"] != args["tgt_vocab_size"]:
        raise UserError(
            f"share_embeddings=True needs one vocabulary, but src_vocab_size={args['src_vocab_size']} and "
            f"tgt_vocab_size={args['tgt_vocab_size']} differ; use a joint tokenizer or share_embeddings=False"
        )
    if not args["share_decoder_output"]:
        raise UserError(
            "share_embeddings=True ties the output projection too, so share_decoder_output=False contradicts "
            "it; set share_embeddings=False as well, or share_decoder_output=True"
        )


def _check_positions(args: dict[str, Any]) -> None:
    """position_offset and sinusoid_layout (the keys a builder has; an old config has neither)."""
    offset = args.get("position_offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise UserError(f"position_offset={offset!r} must be a non-negative integer (0: count from 0)")
    layout = args.get("sinusoid_layout", "standard")
    check_choice("sinusoid_layout", layout, SINUSOID_LAYOUTS)
    if layout != "standard" and args["positional"] != "sinusoidal":
        raise UserError(
            f"sinusoid_layout={layout!r} shapes sinusoidal positions, but positional={args['positional']!r}; "
            "set positional=sinusoidal or sinusoid_layout=standard"
        )
    if layout == "fairseq" and args["d_model"] < 4:
        raise UserError(f"sinusoid_layout='fairseq' needs d_model >= 4 (got {args['d_model']})")


def validate_arguments(args: dict[str, Any]) -> None:
    """Reject impossible settings with one-line messages before any module is built."""
    for name in _POSITIVE_INTEGERS:
        if name in args:
            check_positive(name, args[name])
    check_positive("window", args["window"], allow_none=True)
    for name in _SWITCHES:
        if name in args and not isinstance(args[name], bool):
            raise UserError(f"{name}={args[name]!r} must be true or false")
    if args["d_model"] % args["n_heads"]:
        raise UserError(f"n_heads={args['n_heads']} must divide d_model={args['d_model']}")
    check_choice("positional", args["positional"], POSITIONAL_KINDS)
    check_choice("attention_backend", args["attention_backend"], ATTENTION_BACKENDS)
    check_choice("norm", args["norm"], NORMS)
    check_choice("activation", args["activation"], ACTIVATIONS)
    if "downsample_mode" in args:
        check_choice("downsample_mode", args["downsample_mode"], DOWNSAMPLE_MODES)
    for name in ("dropout", "attention_dropout", "activation_dropout"):
        if not 0.0 <= float(args[name]) < 1.0:
            raise UserError(f"{name}={args[name]!r} must be in [0, 1)")
    if not 0 <= args["pad_id"] < min(args["src_vocab_size"], args["tgt_vocab_size"]):
        raise UserError(f"pad_id={args['pad_id']} must be a valid token id (0 <= pad_id < vocab size)")
    if args["positional"] == "rope" and (args["d_model"] // args["n_heads"]) % 2:
        raise UserError("positional='rope' needs an even head dimension (d_model / n_heads)")
    _check_positions(args)
    if args["attention_backend"] == "xformers" and not xformers_installed():
        raise UserError(
            "attention_backend='xformers' requested but xformers is not installed; "
            "pip install 'seq2seq[xformers]' or choose attention_backend='sdpa'"
        )
    if "share_embeddings" in args:
        _check_sharing(args)


__all__ = ["check_choice", "check_embedding_sharing", "check_positive", "validate_arguments"]


def check_alignment_head(args: dict[str, Any]) -> None:
    """alignment_layer / alignment_head: both None, or a decoder layer and one of its heads (negative
    numbers count from the end)."""
    layer, head = args.get("alignment_layer"), args.get("alignment_head")
    if layer is None and head is None:
        return
    layers, heads = args["decoder_layers"], args["n_heads"]
    if layer is None or head is None:
        raise UserError(f"alignment_layer={layer} and alignment_head={head}: set both (e.g. -2 and 0) "
                        "or neither")  # fmt: skip
    if not -layers <= int(layer) < layers:
        raise UserError(f"alignment_layer={layer} is not a decoder layer of this model ({layers} layers); "
                        f"use 0 to {layers - 1}, or -1 for the last")  # fmt: skip
    if not -heads <= int(head) < heads:
        raise UserError(f"alignment_head={head} is not a head of this model ({heads} heads); use 0 to "
                        f"{heads - 1}")  # fmt: skip

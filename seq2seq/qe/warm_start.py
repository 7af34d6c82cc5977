"""Start a QE model from the translation model's encoder: what it learned about both languages.

The encoder-only model's stack has the encoder-decoder's encoder layout, so its layers and final norm
take the translation encoder's weights as they are (the first `layers` of them), and its one embedding
table takes the source embedding for the source rows and the target (decoder) embedding for the
translation rows (seq2seq.model.encoder_only). The pooled head starts fresh. The two models must agree
in width, heads, feed-forward width, norm, activation, positions and vocabularies, and with learned
positions (a table of max_positions rows) in max_positions; anything else is a one-line error.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from seq2seq.checkpoint import load_checkpoint, model_weights
from seq2seq.errors import UserError
from seq2seq.model.encoder_only import EncoderOnly
from seq2seq.model.families import ENCODER_DECODER

log = logging.getLogger(__name__)

MUST_AGREE = ("d_model", "n_heads", "ffn_dim", "norm", "activation", "positional", "src_vocab_size",
              "tgt_vocab_size", "scale_embeddings", "sinusoid_layout", "position_offset")  # fmt: skip
# What a checkpoint written before a setting existed holds: the setting's default.
DEFAULTS = {"scale_embeddings": True, "sinusoid_layout": "standard", "position_offset": 0}


@torch.no_grad()
def warm_start(model: EncoderOnly, path: Path) -> None:
    """Copy the encoder-decoder checkpoint's encoder and embeddings at `path` into `model`."""
    payload = load_checkpoint(path)
    config = payload.get("model_config") or {}
    if config.get("family", ENCODER_DECODER) != ENCODER_DECODER:  # none recorded: an encoder-decoder
        raise UserError(f"init_from={path} holds a {config.get('family')} model; pass an encoder-decoder "
                        "checkpoint written by seq2seq-train")  # fmt: skip
    agree = MUST_AGREE + (("max_positions",) if model.config.get("positional") == "learned" else ())
    differing = [
        key for key in agree if config.get(key, DEFAULTS.get(key)) != model.config.get(key, DEFAULTS.get(key))
    ]
    if differing:
        shown = ", ".join(f"{key}={model.config.get(key)} vs {config.get(key)}" for key in differing)
        raise UserError(f"init_from={path} does not fit this QE model ({shown}); set model.* to the "
                        "translation model's values")  # fmt: skip
    layers = int(model.config["layers"])
    if layers > int(config["encoder_layers"]):
        raise UserError(f"model.layers={layers} but init_from={path} has {config['encoder_layers']} encoder "
                        f"layers; set model.layers <= {config['encoder_layers']}")  # fmt: skip
    weights = model_weights(payload)  # a LoRA run's adapters merged
    state = model.state_dict()
    copied = 0
    for name in state:
        if not name.startswith("encoder.") or name == "encoder.embedding.weight":
            continue
        if name in weights:
            state[name].copy_(weights[name])
            copied += 1
    source_rows = int(config["src_vocab_size"])
    table = state["encoder.embedding.weight"]  # (src V + tgt V, D)
    table[:source_rows].copy_(weights["encoder.embedding.weight"])
    table[source_rows:].copy_(weights["decoder.embedding.weight"])
    model.load_state_dict(state)
    log.info(
        "QE model initialised from %s: embeddings and %d encoder tensors (%d layers)", path, copied, layers
    )


__all__ = ["warm_start"]

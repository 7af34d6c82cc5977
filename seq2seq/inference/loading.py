"""Rebuild a model and its tokenizers from a checkpoint alone (no config files, no data)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.checkpoint import load_checkpoint, model_weights
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY
from seq2seq.errors import UserError, warn_renamed_keyword
from seq2seq.model import build_from_config
from seq2seq.model.families import TRANSLATING_FAMILIES
from seq2seq.nn.backends import xformers_installed

log = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    model: nn.Module
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    config: dict[str, Any]
    step: int
    tuned_decoding: dict[str, Any] | None = None  # the stored record (seq2seq.decode.tuned_decoding)

    @property
    def decoding(self) -> dict[str, Any] | None:
        """The name before this release, still accepted with a warning (until the next one)."""
        warn_renamed_keyword("LoadedModel.decoding", "LoadedModel.tuned_decoding")
        return self.tuned_decoding


def load_for_inference(path: Path, device: torch.device) -> LoadedModel:
    """The model in eval mode on `device`, with the tokenizers it was trained with."""
    payload = load_checkpoint(path, map_location="cpu", mmap=True)  # the optimizer state is never read
    missing = [key for key in ("model", "model_config", "tokenizer") if key not in payload]
    if missing:
        raise UserError(
            f"checkpoint {path} lacks {', '.join(missing)}; pass a checkpoint written by seq2seq-train"
        )
    model = build_from_config(usable_model_config(payload["model_config"], device))
    try:
        model.load_state_dict(model_weights(payload))  # a LoRA run's adapters merged
    except RuntimeError as error:
        first_line = str(error).strip().splitlines()[0]
        raise UserError(f"checkpoint {path} weights do not match its model settings ({first_line})") from None
    tokenizers = payload["tokenizer"]
    src_tokenizer = tokenizer_from_bytes(tokenizers["src"])
    tgt_tokenizer = (
        src_tokenizer
        if tokenizers.get("tgt") in (None, tokenizers["src"])
        else tokenizer_from_bytes(tokenizers["tgt"])
    )
    model.to(device).eval()
    return LoadedModel(
        model=model,
        src_tokenizer=src_tokenizer,
        tgt_tokenizer=tgt_tokenizer,
        config=payload.get("config", {}),
        step=int(payload.get("step", 0)),
        tuned_decoding=payload.get(PAYLOAD_KEY),
    )


def usable_model_config(config: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """The checkpoint's model settings, with the attention backend swapped for PyTorch SDPA when it was
    xFormers and xFormers cannot run here (not installed, or no CUDA): the weights are the same, and the
    outputs agree to float precision (tests/nn/test_backends.py)."""
    if config.get("attention_backend") != "xformers":
        return config
    if xformers_installed() and device.type == "cuda":
        return config
    why = "it is not installed" if not xformers_installed() else f"it has no kernels for {device.type}"
    log.info(
        "the model was trained with attention_backend=xformers, which cannot run here (%s); using sdpa", why
    )
    return {**config, "attention_backend": "sdpa"}


def load_ensemble(paths: Sequence[Path], device: torch.device) -> LoadedModel:
    """One checkpoint as it is, or several as an Ensemble, of translation models (not a QE model); their
    tokenizers must be the same. An ensemble
    has the first model's config, tuned decoding settings and tokenizers."""
    members = [load_for_inference(path, device) for path in paths]
    for path, member in zip(paths, members):
        if member.model.family not in TRANSLATING_FAMILIES:
            raise UserError(f"{path} holds a quality-estimation model ({member.model.family}), which scores "
                            "translations but does not make them; use seq2seq-qe, or pass a translation "
                            "checkpoint")  # fmt: skip
    if len(members) == 1:
        return members[0]
    first = members[0]
    for path, member in zip(paths[1:], members[1:]):
        if (member.src_tokenizer, member.tgt_tokenizer) != (first.src_tokenizer, first.tgt_tokenizer):
            raise UserError(
                f"{paths[0]} and {path} use different tokenizers; an ensemble needs models trained with the "
                "same sentencepiece model(s)"
            )
    ensemble = Ensemble([member.model for member in members]).to(device).eval()
    return LoadedModel(
        ensemble,
        first.src_tokenizer,
        first.tgt_tokenizer,
        first.config,
        max(m.step for m in members),
        first.tuned_decoding,
    )

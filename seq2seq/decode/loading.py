"""Rebuild a model and its tokenizers from a checkpoint alone (no config files, no data)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.checkpoint import load_checkpoint
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import UserError
from seq2seq.model import build_model


@dataclass
class LoadedModel:
    model: nn.Module
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    config: dict[str, Any]
    step: int


def load_for_inference(path: Path, device: torch.device) -> LoadedModel:
    """The model in eval mode on `device`, with the tokenizers it was trained with."""
    payload = load_checkpoint(path, map_location="cpu")
    missing = [key for key in ("model", "model_config", "tokenizer") if key not in payload]
    if missing:
        raise UserError(
            f"checkpoint {path} lacks {', '.join(missing)}; pass a checkpoint written by seq2seq-train"
        )
    model = build_model(**payload["model_config"])
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError as error:
        first_line = str(error).strip().splitlines()[0]
        raise UserError(f"checkpoint {path} weights do not match its model settings ({first_line})") from None
    tokenizers = payload["tokenizer"]
    src_tokenizer = Tokenizer.from_bytes(tokenizers["src"])
    tgt_tokenizer = (
        src_tokenizer
        if tokenizers.get("tgt") in (None, tokenizers["src"])
        else Tokenizer.from_bytes(tokenizers["tgt"])
    )
    model.to(device).eval()
    return LoadedModel(
        model=model,
        src_tokenizer=src_tokenizer,
        tgt_tokenizer=tgt_tokenizer,
        config=payload.get("config", {}),
        step=int(payload.get("step", 0)),
    )

"""The model tests' model (the tiny size) and right-padded batches."""

from __future__ import annotations

from typing import Any

import torch
from tiny_models import tiny_model

from seq2seq.model import Seq2Seq

PAD = 0
VOCAB = 23
TOL = {"rtol": 1e-5, "atol": 1e-5}


def make_model(seed: int = 0, **overrides: Any) -> Seq2Seq:
    """The tiny model over VOCAB tokens with 64 positions; eval mode, dropout 0 unless overridden."""
    return tiny_model(VOCAB, seed=seed, pad_id=PAD, **{"max_positions": 64, **overrides})


def padded(lengths: list[int], total: int, *, seed: int) -> torch.Tensor:
    """Right-padded random tokens (never PAD inside a sentence). Shapes: -> (len(lengths), total)."""
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, VOCAB, (len(lengths), total), generator=gen)
    for row, length in enumerate(lengths):
        tokens[row, length:] = PAD
    return tokens


def batch(*, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """src (3, 9) with padding in two rows; tgt_in (3, 8)."""
    return padded([9, 6, 3], 9, seed=seed), padded([8, 8, 8], 8, seed=seed + 100)

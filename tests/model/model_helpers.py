"""Small models and right-padded batches shared by the model tests."""

from __future__ import annotations

from typing import Any

import torch

from seq2seq.model import Seq2Seq, build_model

PAD = 0
VOCAB = 23
TOL = {"rtol": 1e-5, "atol": 1e-5}


def small_model(seed: int = 0, **overrides: Any) -> Seq2Seq:
    """A two-layer model with a 16-dim embedding; eval mode, dropout 0 unless overridden."""
    torch.manual_seed(seed)
    args: dict[str, Any] = {
        "src_vocab_size": VOCAB,
        "tgt_vocab_size": VOCAB,
        "pad_id": PAD,
        "d_model": 16,
        "n_heads": 2,
        "ffn_dim": 32,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "dropout": 0.0,
        "max_positions": 64,
    }
    args.update(overrides)
    return build_model(**args).eval()


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

"""Token embeddings scaled by sqrt(D), and the output projection that may share their weights."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.nn.linear import linear


class TokenEmbedding(nn.Module):
    """Embedding lookup times sqrt(D), so unit-scale positions don't drown the N(0, 1/D) tokens."""

    def __init__(self, vocab_size: int, d_model: int, pad_id: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        nn.init.normal_(self.weight, mean=0.0, std=d_model**-0.5)
        with torch.no_grad():
            self.weight[pad_id].zero_()
        self.pad_id = pad_id
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: Tensor) -> Tensor:
        """Shapes: tokens (B, T) -> (B, T, D)."""
        return F.embedding(tokens, self.weight, padding_idx=self.pad_id) * self.scale


class OutputProjection(nn.Module):
    """Hidden states to vocabulary logits; `shared_weight` ties it to an embedding (Press & Wolf, 2017)."""

    def __init__(self, d_model: int, vocab_size: int, *, shared_weight: nn.Parameter | None = None) -> None:
        super().__init__()
        if shared_weight is None:
            shared_weight = nn.Parameter(torch.empty(vocab_size, d_model))
            nn.init.normal_(shared_weight, mean=0.0, std=d_model**-0.5)
        self.weight = shared_weight

    def forward(self, hidden: Tensor) -> Tensor:
        """Shapes: (B, T, D) -> (B, T, V)."""
        return linear(hidden, self.weight)

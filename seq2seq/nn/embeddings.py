"""Token embeddings scaled by sqrt(D) (or not), and the output projection that may share their weights."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.nn.linear import linear


class TokenEmbedding(nn.Module):
    """Embedding lookup times sqrt(D), so unit-scale positions don't drown the N(0, 1/D) tokens.

    `scale=False` gives the table's rows as they are (times 1): models trained that way, such as
    M2M100 configurations with `scale_embedding: false`, read their embeddings unscaled.
    """

    def __init__(self, vocab_size: int, d_model: int, pad_id: int, *, scale: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        nn.init.normal_(self.weight, mean=0.0, std=d_model**-0.5)
        with torch.no_grad():
            self.weight[pad_id].zero_()
        self.pad_id = pad_id
        self.scale = math.sqrt(d_model) if scale else 1.0

    def forward(self, tokens: Tensor) -> Tensor:
        """Shapes: tokens (B, T) -> (B, T, D)."""
        rows = F.embedding(tokens, self.weight, padding_idx=self.pad_id)  # (B, T, D)
        return rows if self.scale == 1.0 else rows * self.scale


class OutputProjection(nn.Module):
    """Hidden states to vocabulary logits; `shared_weight` ties it to an embedding (Press & Wolf, 2017).

    `bias=True` adds a (V,) vector to the logits, zeros at first (Marian's `final_logits_bias`); it is a
    parameter of its own (`output.bias`) even when the weight is tied. Without it `bias` is None.
    """

    def __init__(
        self,
        d_model: int,
        vocab_size: int,
        *,
        shared_weight: nn.Parameter | None = None,
        bias: bool = False,
    ) -> None:
        super().__init__()
        if shared_weight is None:
            shared_weight = nn.Parameter(torch.empty(vocab_size, d_model))
            nn.init.normal_(shared_weight, mean=0.0, std=d_model**-0.5)
        self.weight = shared_weight
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None  # (V,) or None

    def forward(self, hidden: Tensor) -> Tensor:
        """Shapes: (B, T, D) -> (B, T, V)."""
        return linear(hidden, self.weight, self.bias)

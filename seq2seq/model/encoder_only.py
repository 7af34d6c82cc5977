"""The encoder-only (BERT-style) family: one bidirectional stack over `source </s> translation </s>`,
pooled into a few numbers. Its first use is quality estimation: how good is a translation, with no
reference to compare it with (seq2seq.qe).

Layout. Sources and translations arrive right-padded, each with the vocabulary of its side, (B, S) and
(B, T). Each row becomes one sequence of its real tokens, the source first, then the translation,
then padding:

    columns  0 ... Ls-1        | Ls ...      Ls+Lt-1 | ...
    row      x1 x2 </s>(src)   | y1 y2 </s>(tgt)     | pad

The source's `</s>` separates the two segments. The translation's ids are shifted by the source
vocabulary size, so one embedding table holds both sides and a piece means something different in a
source than in a translation (the role BERT's segment embeddings play); a joint tokenizer is handled
the same way. The stack is the encoder-decoder's `Encoder`, unchanged: every position scheme, attention
backend, local window and gradient checkpointing apply. Real tokens always start at column 0, so
padding changes no output.

Pooling: the mean of the final states over each row's real tokens, then a small head (linear, tanh,
linear) gives `outputs` numbers per row (raw; a QE model reads one through a sigmoid).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from seq2seq.model.families import ENCODER_ONLY
from seq2seq.model.transformer import Encoder
from seq2seq.nn.dropout import Dropout

FAMILY = ENCODER_ONLY


def join_segments(src: Tensor, hyp: Tensor, *, pad_id: int, offset: int) -> tuple[Tensor, Tensor]:
    """Each row's real source tokens, then its real translation tokens (shifted by `offset`), then pads.

    Shapes: src (B, S), hyp (B, T) right-padded -> tokens, keep (B, S + T).
    """
    src_keep, hyp_keep = src != pad_id, hyp != pad_id  # (B, S), (B, T)
    src_lengths = src_keep.sum(dim=1, keepdim=True)  # (B, 1)
    lengths = src_lengths + hyp_keep.sum(dim=1, keepdim=True)  # (B, 1)
    both = torch.cat([src, hyp + offset], dim=1)  # (B, S + T)
    columns = torch.arange(both.shape[1], device=src.device)[None, :]  # (1, S + T)
    # column c reads the source's column c, or the translation's column c - Ls (stored at S + c - Ls)
    read = torch.where(columns < src_lengths, columns, src.shape[1] + columns - src_lengths)  # (B, S + T)
    keep = columns < lengths  # (B, S + T)
    tokens = both.gather(1, read.clamp(max=both.shape[1] - 1)).masked_fill(~keep, pad_id)
    return tokens, keep


class EncoderOnly(nn.Module):
    """A bidirectional Transformer encoder over `source </s> translation </s>` with a pooled head.

    `encoder` is the encoder-decoder's Encoder (embedding of src_vocab_size + tgt_vocab_size ids, position
    scheme, layers); `config` holds the builder arguments and the family (saved in checkpoints).
    """

    family = FAMILY

    def __init__(
        self, encoder: Encoder, *, outputs: int, dropout: float, pad_id: int, config: dict[str, Any]
    ) -> None:
        super().__init__()
        self.encoder = encoder
        d_model = int(config["d_model"])
        self.head = nn.Sequential(
            nn.Linear(d_model, d_model), nn.Tanh(), Dropout(dropout), nn.Linear(d_model, outputs)
        )
        self.pad_id = pad_id
        self.config = dict(config)

    @property
    def target_offset(self) -> int:
        """What a translation's token ids are shifted by: the source vocabulary size."""
        return int(self.config["src_vocab_size"])

    def forward(self, src: Tensor, hyp: Tensor) -> Tensor:
        """Raw outputs per row. Shapes: src (B, S), hyp (B, T) right-padded, each ending in eos -> (B, K)."""
        return self.head(self.pooled(src, hyp))

    def pooled(self, src: Tensor, hyp: Tensor) -> Tensor:
        """The mean final state over each row's real tokens. Shapes: src (B, S), hyp (B, T) -> (B, D)."""
        tokens, keep = join_segments(src, hyp, pad_id=self.pad_id, offset=self.target_offset)
        states = self.encoder(tokens, keep)  # (B, S + T, D)
        weights = keep.to(states.dtype)[:, :, None]  # (B, S + T, 1)
        return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)  # (B, D)

    @property
    def max_positions(self) -> int:
        """Tokens a source and its translation may hold together (eos of both included)."""
        return int(self.config["max_positions"])


__all__ = ["FAMILY", "EncoderOnly", "join_segments"]

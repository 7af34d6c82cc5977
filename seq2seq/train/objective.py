"""The training objective of one batch: teacher-forced logits at real target positions, then the loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from seq2seq.data.collate import Batch


def batch_loss(model: nn.Module, batch: Batch, loss_fn: Callable[..., Any], *, pad_id: int) -> Any:
    """`loss_fn(logits, labels)` over the batch's non-pad labels only.

    Padded label positions never reach the output projection, so their D x V logits are not computed.
    Shapes: batch.src (B, S), batch.tgt_in / tgt_out (B, T) -> loss_fn on (N, V) logits, (N,) labels.
    """
    keep = batch.tgt_out != pad_id  # (B, T)
    logits = model(batch.src, batch.tgt_in, output_keep=keep)  # (N, V)
    return loss_fn(logits, batch.tgt_out[keep])

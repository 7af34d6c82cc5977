"""The training objective of one batch: decoder states at real target positions, then the loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from seq2seq.data.collate import Batch


def batch_loss(model: nn.Module, batch: Batch, loss_fn: Callable[..., Any], *, pad_id: int) -> Any:
    """`loss_fn(hidden, output_weight, labels)` over the batch's non-pad labels only.

    The loss receives the decoder's output states and the output projection's weight rather than
    logits, so it can project and reduce block by block (seq2seq.train.loss.projected_label_smoothed_nll)
    without building (N, V) logits; padded label positions never reach it.
    Shapes: batch.src (B, S), batch.tgt_in / tgt_out (B, T) -> loss_fn on (N, D) states, (V, D) weight,
    (N,) labels.
    """
    keep = batch.tgt_out != pad_id  # (B, T)
    hidden = model(batch.src, batch.tgt_in, output_keep=keep, project=False)  # (N, D)
    output_weight = getattr(model, "module", model).output.weight  # (V, D); DDP keeps the model in .module
    return loss_fn(hidden, output_weight, batch.tgt_out[keep])

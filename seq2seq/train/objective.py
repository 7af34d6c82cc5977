"""The training objective of one batch: decoder states at real target positions, then the loss."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from seq2seq.data.collate import Batch
from seq2seq.train.alignment_loss import guided_alignment_loss
from seq2seq.train.distributed import unwrapped


@dataclass(frozen=True)
class TrainingLoss:
    """The token loss (hidden, output_weight, labels[, output_bias=]) -> LossOutput, and the objective's
    own settings. `output_bias` is passed only for a model whose output projection has one.

    source_weight: a decoder-only model's source language-model term, added to the loss sum with this
    weight (0: the loss is on target tokens only). The term is normalised, like the target's, by the
    batch's target tokens, and perplexity stays the target's.
    alignment_weight: guided alignment's term (seq2seq.train.alignment_loss) for the batches that carry
    word links, added with this weight (0: none); the model's alignment head is trained.
    """

    token_loss: Callable[..., Any]
    source_weight: float = 0.0
    alignment_weight: float = 0.0

    def __call__(self, hidden: Any, output_weight: Any, labels: Any, output_bias: Any = None) -> Any:
        if output_bias is None:
            return self.token_loss(hidden, output_weight, labels)
        return self.token_loss(hidden, output_weight, labels, output_bias=output_bias)


def batch_loss(model: nn.Module, batch: Batch, loss_fn: Callable[..., Any], *, pad_id: int) -> Any:
    """`loss_fn(hidden, output_weight, labels)` over the batch's non-pad labels only, plus
    `output_bias=` the output projection's bias when it has one (model.output_bias).

    The loss receives the decoder's output states and the output projection's weight rather than
    logits, so it can project and reduce block by block (seq2seq.train.loss.projected_label_smoothed_nll)
    without building (N, V) logits; padded label positions never reach it.
    Shapes: batch.src (B, S), batch.tgt_in / tgt_out (B, T) -> loss_fn on (N, D) states, (V, D) weight,
    (N,) labels, (V,) bias.
    """
    keep = batch.tgt_out != pad_id  # (B, T)
    source_weight = loss_fn.source_weight if isinstance(loss_fn, TrainingLoss) else 0.0
    alignment_weight = loss_fn.alignment_weight if isinstance(loss_fn, TrainingLoss) else 0.0
    if alignment_weight and batch.alignment is not None:
        hidden, weights = model(batch.src, batch.tgt_in, output_keep=keep, project=False, attending=True)
        output_weight, bias = output_parameters(model)
        out = loss_fn(hidden, output_weight, batch.tgt_out[keep], **bias)  # weights: (B, T, S)
        guided = guided_alignment_loss(weights, batch.alignment)
        return out._replace(loss_sum=out.loss_sum + alignment_weight * guided)
    if not source_weight:
        hidden = model(batch.src, batch.tgt_in, output_keep=keep, project=False)  # (N, D)
        output_weight, bias = output_parameters(model)
        return loss_fn(hidden, output_weight, batch.tgt_out[keep], **bias)
    hidden, source_hidden = model(batch.src, batch.tgt_in, output_keep=keep, project=False, source_lm=True)
    output_weight, bias = output_parameters(model)
    out = loss_fn(hidden, output_weight, batch.tgt_out[keep], **bias)
    next_source = batch.src[:, 1:]  # (B, S - 1): what source positions 0 .. S-2 predict
    source = loss_fn(source_hidden, output_weight, next_source[next_source != pad_id], **bias)  # (M, D)
    return out._replace(loss_sum=out.loss_sum + source_weight * source.loss_sum)


def output_parameters(model: nn.Module) -> tuple[Tensor, dict[str, Tensor]]:
    """The output projection's weight (V, D) and, when it has one, {"output_bias": its bias (V,)}, read
    after the model's forward: a sharded model (trainer.strategy=fsdp) holds them whole only from then
    until its backward."""
    output = unwrapped(model).output
    return output.weight, ({} if output.bias is None else {"output_bias": output.bias})

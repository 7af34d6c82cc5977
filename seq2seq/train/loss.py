"""Label-smoothed cross-entropy as a pure function of logits and targets.

The loss core knows nothing about models, batches or optimizers: it returns sums and a token count so
the caller decides how to normalise (per batch, per accumulated step, across devices) and how to
report (perplexity from the unsmoothed sum).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from seq2seq.errors import UserError

# exp() of anything above this overflows a float64; perplexity is reported as inf instead.
_MAX_LOG_PERPLEXITY = math.log(torch.finfo(torch.float64).max)


class LossOutput(NamedTuple):
    """Sums over the non-pad target tokens of one call.

    ``loss_sum`` carries the graph (divide by ``n_tokens`` and backprop); ``nll_sum`` is detached and
    only for reporting; ``n_tokens`` is a 0-dim int64 tensor on the logits' device, so that reading it
    stays the caller's choice of when to synchronise with the accelerator.
    """

    loss_sum: torch.Tensor
    nll_sum: torch.Tensor
    n_tokens: torch.Tensor


def label_smoothed_nll(
    logits: torch.Tensor, target: torch.Tensor, *, epsilon: float, pad_id: int
) -> LossOutput:
    """Smoothed negative log-likelihood summed over the tokens where ``target != pad_id``.

    Smoothing spreads ``epsilon`` uniformly over the whole vocabulary, target included::

        loss = (1 - epsilon) * nll + epsilon / V * sum_v(-log p_v)

    This is the original fairseq / Szegedy et al. form and equals PyTorch's
    ``F.cross_entropy(label_smoothing=epsilon)``; current fairseq instead spreads ``epsilon`` over the
    V - 1 non-target classes, which differs by O(epsilon / V).

    Log-probabilities are computed in at least float32 whatever the logits' dtype (a bf16
    log-softmax loses too much precision). ``-log p_v = logsumexp(z) - z_v``, so both terms need
    only the per-row logsumexp, the target logit and the mean logit: no (N, V) log-probability or
    one-hot tensor is built, and for float32 logits autograd saves nothing larger than the logits
    themselves.

    Shapes:
        logits: (B, T, V) or (N, V), any float dtype
        target: (B, T) or (N,) int64 token ids; positions equal to ``pad_id`` are ignored
        returns: three 0-dim tensors (float32 or float64, same, int64)
    """
    _check_epsilon(epsilon)
    if logits.shape[:-1] != target.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not match target {tuple(target.shape)} + (V,)")
    logits = logits.reshape(-1, logits.shape[-1])  # (N, V)
    target = target.reshape(-1)  # (N,)
    keep = target != pad_id  # (N,)
    safe_target = target.masked_fill(~keep, 0)  # pad_id may lie outside [0, V)
    loss_sum, nll_sum = _SmoothedNLL.apply(logits, safe_target, keep, float(epsilon))
    return LossOutput(loss_sum=loss_sum, nll_sum=nll_sum.detach(), n_tokens=keep.sum())


def _check_epsilon(epsilon: float) -> None:
    if not 0.0 <= epsilon < 1.0:
        raise UserError(f"label smoothing epsilon={epsilon} is outside [0, 1); use e.g. 0.1 (or 0 for none)")


class _SmoothedNLL(torch.autograd.Function):
    """Forward as in the docstring above; backward in one pass over the logits.

    d loss / d z_v = softmax(z)_v - (1 - epsilon) * [v = target] - epsilon / V for kept rows, 0 for pads.
    Autograd through logsumexp + gather + mean would instead fill and scatter several (N, V) buffers,
    several times slower (figures: benchmarks/results.md).
    """

    @staticmethod
    def forward(ctx, logits, safe_target, keep, epsilon):  # signature fixed by autograd.Function
        compute_dtype = torch.promote_types(logits.dtype, torch.float32)
        z = logits.to(compute_dtype)  # (N, V); no copy for fp32 / fp64
        log_normaliser = torch.logsumexp(z, dim=-1)  # (N,)
        nll = log_normaliser - z.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)  # (N,) = -log p_target
        uniform_nll = log_normaliser - z.mean(dim=-1)  # (N,) = sum_v(-log p_v) / V
        per_token = (1.0 - epsilon) * nll + epsilon * uniform_nll  # (N,)
        zero = per_token.new_zeros(())
        # where(), not multiplication, so that non-finite logits at pad positions cannot leak in.
        loss_sum = torch.where(keep, per_token, zero).sum()
        nll_sum = torch.where(keep, nll, zero).sum()
        ctx.save_for_backward(logits, safe_target, keep, log_normaliser)
        ctx.epsilon = epsilon
        ctx.mark_non_differentiable(nll_sum)
        return loss_sum, nll_sum

    @staticmethod
    def backward(ctx, grad_loss, _grad_nll):  # signature fixed by autograd.Function
        logits, safe_target, keep, log_normaliser = ctx.saved_tensors
        epsilon, vocab = ctx.epsilon, logits.shape[-1]
        grad = torch.exp(logits.to(log_normaliser.dtype) - log_normaliser.unsqueeze(-1))  # (N, V) softmax
        grad.sub_(epsilon / vocab)
        grad.scatter_add_(-1, safe_target.unsqueeze(-1), grad.new_full((grad.shape[0], 1), epsilon - 1.0))
        grad = torch.where(keep.unsqueeze(-1), grad.mul_(grad_loss), grad.new_zeros(()))
        return grad.to(logits.dtype), None, None, None


def projected_label_smoothed_nll(
    hidden: torch.Tensor,
    output_weight: torch.Tensor,
    target: torch.Tensor,
    *,
    epsilon: float,
    pad_id: int,
    chunk_elements: int = 1 << 22,
    output_bias: torch.Tensor | None = None,
) -> LossOutput:
    """``label_smoothed_nll(F.linear(hidden, output_weight, output_bias), target)`` without the (N, V)
    logits (``output_bias``: the output projection's (V,) bias, if it has one).

    The output projection and the loss run together over blocks of rows (``chunk_elements`` logits,
    16 MiB in float32, per block), and the gradients with respect to ``hidden``, ``output_weight`` and
    ``output_bias`` are computed in the same pass: the loss is the end of the graph, so they are known
    as soon as a block's softmax is. No (N, V) logits, softmax or gradient is ever stored, and it was
    faster than the projection followed by the loss, in float32 and more so under bf16 autocast. Blocks
    of a few hundred rows were fastest; much smaller ones re-read the (V, D) weight and its gradient too often
    (figures: benchmarks/results.md). Under autocast the three matmuls run in the autocast dtype, as
    they would through autograd; reductions are float32.

    Shapes:
        hidden: (N, D) or (B, T, D) decoder output states
        output_weight: (V, D); output_bias: (V,) or None
        target: hidden.shape[:-1] token ids; positions equal to ``pad_id`` are ignored
        returns: three 0-dim tensors, as label_smoothed_nll
    """
    _check_epsilon(epsilon)
    if hidden.shape[:-1] != target.shape or hidden.shape[-1] != output_weight.shape[-1]:
        raise ValueError(
            f"hidden {tuple(hidden.shape)}, output weight {tuple(output_weight.shape)} and target "
            f"{tuple(target.shape)} do not fit (N, D), (V, D), (N,)"
        )
    if output_bias is not None and output_bias.shape != output_weight.shape[:1]:
        raise ValueError(f"output bias {tuple(output_bias.shape)} does not fit the weight's (V,)")
    keep = target != pad_id  # (...)
    hidden, target = hidden[keep], target[keep]  # (N, D), (N,): real tokens only
    rows = max(1, chunk_elements // output_weight.shape[0])
    trained = [hidden, output_weight] + ([] if output_bias is None else [output_bias])
    with_grad = torch.is_grad_enabled() and any(t.requires_grad for t in trained)
    loss_sum, nll_sum = _ProjectedSmoothedNLL.apply(
        hidden, output_weight, output_bias, target, float(epsilon), rows, with_grad
    )
    return LossOutput(loss_sum=loss_sum, nll_sum=nll_sum.detach(), n_tokens=keep.sum())


class _ProjectedSmoothedNLL(torch.autograd.Function):
    """Forward and gradient of projection + smoothed NLL, block by block; backward only scales them."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, epsilon, rows, with_grad):  # signature fixed by autograd
        compute_dtype = torch.promote_types(hidden.dtype, torch.float32)
        loss_sum = hidden.new_zeros((), dtype=compute_dtype)
        nll_sum = hidden.new_zeros((), dtype=compute_dtype)
        # only the gradients autograd asks for: a frozen output weight (trainer.lora, trainer.freeze) costs
        # neither its (V, D) gradient buffer nor the product that fills it
        needs_hidden, needs_weight, needs_bias = (with_grad and needed for needed in ctx.needs_input_grad[:3])
        grad_hidden = torch.empty_like(hidden) if needs_hidden else None  # (N, D)
        grad_weight = torch.zeros_like(weight, dtype=compute_dtype) if needs_weight else None  # (V, D)
        grad_bias = None  # (V,) when there is a bias to train
        if needs_bias:
            grad_bias = torch.zeros(weight.shape[0], dtype=compute_dtype, device=weight.device)
        for start in range(0, hidden.shape[0], rows):
            block, block_target = hidden[start : start + rows], target[start : start + rows]  # (n, D), (n,)
            logits = F.linear(block, weight, bias).to(compute_dtype)  # (n, V); autocast picks the dtype
            losses = _block_losses(logits, block_target, epsilon, in_place_softmax=with_grad)
            loss_sum += losses[0]
            nll_sum += losses[1]
            if with_grad:
                grad_logits = logits  # (n, V), now d loss / d logits (see _block_losses)
                if grad_hidden is not None:
                    grad_hidden[start : start + rows] = torch.mm(grad_logits, weight.to(grad_logits.dtype))
                if grad_weight is not None:
                    grad_weight += torch.mm(grad_logits.t(), block.to(grad_logits.dtype))  # (V, D)
                if grad_bias is not None:
                    grad_bias += grad_logits.sum(dim=0)  # (V,)
        ctx.save_for_backward(grad_hidden, grad_weight, grad_bias)
        ctx.dtypes = (weight.dtype, None if bias is None else bias.dtype)
        ctx.mark_non_differentiable(nll_sum)
        return loss_sum, nll_sum

    @staticmethod
    def backward(ctx, grad_loss, _grad_nll):  # signature fixed by autograd.Function
        grad_hidden, grad_weight, grad_bias = ctx.saved_tensors
        weight_dtype, bias_dtype = ctx.dtypes
        grad_hidden = None if grad_hidden is None else grad_hidden * grad_loss
        grad_weight = None if grad_weight is None else (grad_weight * grad_loss).to(weight_dtype)
        grad_bias = None if grad_bias is None else (grad_bias * grad_loss).to(bias_dtype)
        return grad_hidden, grad_weight, grad_bias, None, None, None, None


def _block_losses(
    logits: torch.Tensor, target: torch.Tensor, epsilon: float, *, in_place_softmax: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums of the smoothed and plain NLL of a block; overwrites `logits` (a temporary).

    With `in_place_softmax`, `logits` end as d loss / d z_v = softmax(z)_v - (1 - epsilon) * [v = target]
    - epsilon / V, so that a block needs one (n, V) buffer (torch.logsumexp alone would allocate a
    second one). Shapes: logits (n, V) float32 or float64, target (n,).
    """
    target_logit = logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (n,)
    mean_logit = logits.mean(dim=-1)  # (n,)
    max_logit = logits.amax(dim=-1, keepdim=True)  # (n, 1)
    unnormalised = logits.sub_(max_logit).exp_()  # (n, V), in place; every entry in (0, 1]
    normaliser = unnormalised.sum(dim=-1, keepdim=True)  # (n, 1), >= 1
    log_normaliser = (max_logit + normaliser.log()).squeeze(-1)  # (n,) logsumexp
    nll = log_normaliser - target_logit  # (n,)
    uniform_nll = log_normaliser - mean_logit  # (n,)
    loss_sum = ((1.0 - epsilon) * nll + epsilon * uniform_nll).sum()
    if in_place_softmax:
        unnormalised.div_(normaliser).sub_(epsilon / logits.shape[-1])  # softmax - epsilon / V
        logits.scatter_add_(-1, target.unsqueeze(-1), logits.new_full((logits.shape[0], 1), epsilon - 1.0))
    return loss_sum, nll.sum()


def perplexity(nll_sum: float | torch.Tensor, n_tokens: int | torch.Tensor) -> float:
    """exp(mean NLL) as a Python float: ``inf`` where it would overflow, ``nan`` for zero tokens."""
    total, count = float(nll_sum), int(n_tokens)
    if count <= 0:
        return math.nan
    mean = total / count
    if mean > _MAX_LOG_PERPLEXITY:
        return math.inf
    return math.exp(mean)

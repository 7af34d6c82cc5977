"""Label-smoothed cross-entropy as a pure function of logits and targets.

The loss core knows nothing about models, batches or optimizers: it returns sums and a token count so
the caller decides how to normalise (per batch, per accumulated step, across devices) and how to
report (perplexity from the unsmoothed sum).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

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
    if not 0.0 <= epsilon < 1.0:
        raise UserError(f"label smoothing epsilon={epsilon} is outside [0, 1); use e.g. 0.1 (or 0 for none)")
    if logits.shape[:-1] != target.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not match target {tuple(target.shape)} + (V,)")
    logits = logits.reshape(-1, logits.shape[-1])  # (N, V)
    target = target.reshape(-1)  # (N,)
    keep = target != pad_id  # (N,)
    safe_target = target.masked_fill(~keep, 0)  # pad_id may lie outside [0, V)
    loss_sum, nll_sum = _SmoothedNLL.apply(logits, safe_target, keep, float(epsilon))
    return LossOutput(loss_sum=loss_sum, nll_sum=nll_sum.detach(), n_tokens=keep.sum())


class _SmoothedNLL(torch.autograd.Function):
    """Forward as in the docstring above; backward in one pass over the logits.

    d loss / d z_v = softmax(z)_v - (1 - epsilon) * [v = target] - epsilon / V for kept rows, 0 for pads.
    Autograd through logsumexp + gather + mean would instead fill and scatter several (N, V) buffers
    (measured: 705 ms vs 255 ms forward + backward for N = 6000, V = 8000 on two cores).
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


def perplexity(nll_sum: float | torch.Tensor, n_tokens: int | torch.Tensor) -> float:
    """exp(mean NLL) as a Python float: ``inf`` where it would overflow, ``nan`` for zero tokens."""
    total, count = float(nll_sum), int(n_tokens)
    if count <= 0:
        return math.nan
    mean = total / count
    if mean > _MAX_LOG_PERPLEXITY:
        return math.inf
    return math.exp(mean)

"""Pure functions that shape a search: length penalty, length limits, n-gram blocking, forced tokens.

None of them touches a model; each takes tensors (or numbers) and returns new ones, so they are
tested on hand-made inputs and shared by greedy, beam and sampling search.

Convention: boolean token masks are `allowed` masks, True = the token may be generated next.
Constraints never renormalise: a blocked token's log-probability becomes -inf and the others keep
the model's values, so a hypothesis' score is always the model's own log-probability. Functions
whose names end in `_` edit the search's own freshly computed log-probabilities in place (a
full-vocabulary copy per step would cost as much as a small decoder layer); all others are pure.
"""

from __future__ import annotations

import torch
from torch import Tensor

NEG_INF = float("-inf")


def length_penalty(length: Tensor | int, alpha: float) -> Tensor | float:
    """GNMT length penalty ((5 + length) / 6) ** alpha (Wu et al., 2016); alpha = 0 gives 1.

    A hypothesis' score is its summed log-probability divided by this. `length` counts the
    output tokens including the final eos.
    """
    return ((5.0 + length) / 6.0) ** alpha


def max_output_lengths(src_lengths: Tensor, *, a: float, b: float) -> Tensor:
    """Per-sentence output limit floor(a * src_length + b), at least 0; it counts tokens before eos.

    Shapes: src_lengths (B,) -> (B,) long.
    """
    return torch.floor(src_lengths.double() * a + b).long().clamp(min=0)


def limit_lengths_(
    logprobs: Tensor, *, step: int, min_len: int, max_lens: Tensor, first_limit: int, eos_id: int
) -> Tensor:
    """Forbid eos before `min_len` output tokens; force eos once a row has `max_lens` tokens.

    `step` is the number of output tokens each row already has; `first_limit` is a known lower
    bound of `max_lens` (a host int), so rows far from their limits cost no full-width pass.
    max_len wins over min_len, and a forced eos keeps its model log-probability.
    Modifies `logprobs` in place and returns it. Shapes: logprobs (N, V), max_lens (N,) -> (N, V).
    """
    eos_logprobs = logprobs[:, eos_id].clone()  # (N,)
    if step < min_len:
        logprobs[:, eos_id] = NEG_INF
    if step >= first_limit:
        at_limit = max_lens <= step  # (N,)
        logprobs.masked_fill_(at_limit[:, None], NEG_INF)
        logprobs[:, eos_id] = torch.where(at_limit, eos_logprobs, logprobs[:, eos_id])
    return logprobs


def no_repeat_ngram_allowed(tokens: Tensor, n: int, vocab_size: int) -> Tensor:
    """Which next tokens would not repeat an n-gram already in the row (fairseq's --no-repeat-ngram-size).

    A token is blocked when the row's last n-1 tokens followed by it already occur in the row.
    Shapes: tokens (N, T) -> allowed (N, V) bool. n < 1 or T < n leaves everything allowed.
    """
    rows, length = tokens.shape
    allowed = torch.ones(rows, vocab_size, dtype=torch.bool, device=tokens.device)
    if n < 1 or length < n:
        return allowed
    grams = tokens.unfold(1, n, 1)  # (N, T - n + 1, n)
    if n == 1:
        matches = torch.ones(grams.shape[:2], dtype=torch.bool, device=tokens.device)
    else:
        tail = tokens[:, length - n + 1 :]  # (N, n - 1)
        matches = (grams[:, :, :-1] == tail[:, None, :]).all(dim=-1)  # (N, T - n + 1)
    blocked = torch.where(matches, grams[:, :, -1], vocab_size)  # (N, T - n + 1); V = "nothing"
    hits = torch.zeros(rows, vocab_size + 1, dtype=torch.bool, device=tokens.device)
    hits.scatter_(1, blocked, True)
    return allowed & ~hits[:, :vocab_size]


def force_tokens(logprobs: Tensor, forced: Tensor, *, free_id: int, scores: Tensor | None = None) -> Tensor:
    """Rows whose `forced` entry is not `free_id` may only produce that token (forced prefixes).

    The forced token gets `scores` (N,), the model's log-probabilities of the forced tokens taken before
    any rule edited `logprobs` (default: read from `logprobs`). Shapes: logprobs (N, V), forced (N,)
    -> (N, V).
    """
    is_forced = (forced != free_id)[:, None]  # (N, 1)
    index = forced.clamp(min=0)[:, None]  # (N, 1)
    kept = logprobs.gather(1, index) if scores is None else scores[:, None]  # (N, 1)
    only = torch.full_like(logprobs, NEG_INF).scatter(1, index, kept)
    return torch.where(is_forced, only, logprobs)


def top_k_top_p_filter(logits: Tensor, *, top_k: int = 0, top_p: float = 1.0) -> Tensor:
    """Keep the `top_k` largest logits (0 = all), then the smallest set whose probability reaches `top_p`.

    Removed entries become -inf; the most likely token always survives. Shapes: (N, V) -> (N, V).
    """
    if 0 < top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (N, 1)
        logits = logits.masked_fill(logits < kth, NEG_INF)
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (N, V)
        probs = sorted_logits.softmax(dim=-1)
        before = probs.cumsum(dim=-1) - probs  # mass of strictly more likely tokens
        remove_sorted = before >= top_p
        remove_sorted[:, 0] = False
        remove = torch.zeros_like(remove_sorted).scatter(1, order, remove_sorted)
        logits = logits.masked_fill(remove, NEG_INF)
    return logits


__all__ = [
    "force_tokens",
    "length_penalty",
    "limit_lengths_",
    "max_output_lengths",
    "no_repeat_ngram_allowed",
    "top_k_top_p_filter",
]

"""An independent attention reference for the tests: explicit loops over rows, float64 softmax.

It shares no code with `seq2seq.nn.backends`, so the manual backend is itself checked by it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def visible(
    b: int,
    i: int,
    j: int,
    *,
    tq: int,
    tk: int,
    keep: Tensor | None,
    causal: bool,
    window: int | None,
    prefix: int = 0,
) -> bool:
    """Whether query i of row b may attend to key j (queries are bottom-right aligned to keys; with
    causal, the first `prefix` keys are seen by every query)."""
    query_position = i + (tk - tq)
    if keep is not None and not bool(keep[b, j] if keep.dim() == 2 else keep[b, i, j]):
        return False
    if causal and j > query_position and j >= prefix:
        return False
    return window is None or abs(query_position - j) < window


def loop_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    keep: Tensor | None = None,
    causal: bool = False,
    window: int | None = None,
    prefix: int = 0,
    bias: Tensor | None = None,
) -> Tensor:
    """softmax(q.k / sqrt(Dh) + bias) v over visible keys, one query row at a time; empty rows are zero.

    Shapes: q (B, H, Tq, Dh); k, v (B, H, Tk, Dh); keep (B, Tk) or (B, Tq, Tk);
    bias (H, Tq, Tk) or (B, H, Tq, Tk) -> (B, H, Tq, Dh), in q's dtype.
    """
    q, k, v = q.detach(), k.detach(), v.detach()
    bias = None if bias is None else bias.detach()
    batch, heads, tq, head_dim = q.shape
    tk = k.shape[2]
    out = torch.zeros(batch, heads, tq, v.shape[-1], dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            for i in range(tq):
                cols = [
                    j
                    for j in range(tk)
                    if visible(b, i, j, tq=tq, tk=tk, keep=keep, causal=causal, window=window, prefix=prefix)
                ]
                if not cols:
                    continue
                scores = []
                for j in cols:
                    score = float(q[b, h, i].double() @ k[b, h, j].double()) / math.sqrt(head_dim)
                    if bias is not None:
                        score += float(bias[h, i, j] if bias.dim() == 3 else bias[b, h, i, j])
                    scores.append(score)
                weights = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=0)  # (len(cols),)
                out[b, h, i] = weights @ v[b, h, cols].double()
    return out.to(q.dtype)


def band_keep(tq: int, tk: int, *, causal: bool, window: int | None) -> Tensor:
    """The explicit dense (Tq, Tk) structural mask, written element by element."""
    mask = torch.zeros(tq, tk, dtype=torch.bool)
    for i in range(tq):
        for j in range(tk):
            mask[i, j] = visible(0, i, j, tq=tq, tk=tk, keep=None, causal=causal, window=window)
    return mask


def qkv(
    batch: int, heads: int, tq: int, tk: int, head_dim: int, *, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """Random float32 queries, keys and values from a fixed seed."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, tq, head_dim, generator=gen)
    k = torch.randn(batch, heads, tk, head_dim, generator=gen)
    v = torch.randn(batch, heads, tk, head_dim, generator=gen)
    return q, k, v


def key_padding(lengths: list[int], tk: int) -> Tensor:
    """(B, Tk) keep mask for right-padded rows of the given lengths."""
    return torch.arange(tk)[None, :] < torch.tensor(lengths)[:, None]

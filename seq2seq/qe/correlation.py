"""Pearson and Spearman correlation, the two numbers QE is judged by (WMT's QE tasks report both)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r; 0.0 when either side is constant (no linear relation can be measured)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"need two equally long sequences of at least 2 values, got {a.size} and {b.size}")
    a, b = a - a.mean(), b - b.mean()
    norm = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / norm) if norm > 0 else 0.0


def ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, ties given the mean of the ranks they span (as scipy.stats.rankdata does)."""
    array = np.asarray(values, dtype=np.float64)
    order = np.argsort(array, kind="stable")
    ordered = array[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]  # first position of each run of equal values
    group = np.cumsum(starts) - 1  # run index of each sorted position
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], ordered.size] - 1
    mean_rank = (first + last) / 2 + 1  # per run
    out = np.empty_like(array)
    out[order] = mean_rank[group]
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the ranks."""
    return pearson(ranks(x), ranks(y))


__all__ = ["pearson", "ranks", "spearman"]

"""A uniform random sample of a corpus in one streaming pass (what the tokenizer is trained on)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from seq2seq.data.corpus import check_policy, decode_line, iter_line_pairs, iter_raw_lines, normalize

T = TypeVar("T")


def reservoir_sample(items: Iterable[T], size: int, *, seed: int) -> list[T]:
    """`size` items drawn uniformly without replacement (Algorithm R), in stream order; every item
    when there are no more than `size`. The same seed and item count give the same positions."""
    rng = random.Random(seed)
    chosen: list[tuple[int, T]] = []
    for position, item in enumerate(items):
        if position < size:
            chosen.append((position, item))
            continue
        slot = rng.randrange(position + 1)
        if slot < size:
            chosen[slot] = (position, item)
    chosen.sort(key=lambda pair: pair[0])
    return [item for _, item in chosen]


def sample_pairs(
    src: str | Path, tgt: str | Path, *, size: int, seed: int, encoding_errors: str = "strict"
) -> tuple[list[str], list[str]]:
    """Up to `size` normalised pairs of two parallel files, drawn uniformly; only the drawn lines are
    decoded, so the pass over the corpus costs little more than reading it."""
    check_policy(encoding_errors)
    pairs = iter_line_pairs(iter_raw_lines(src), iter_raw_lines(tgt), src_name=src, tgt_name=tgt)
    drawn = reservoir_sample(enumerate(pairs, start=1), size, seed=seed)
    sources = [normalize(decode_line(s, src, number, encoding_errors)[0]) for number, (s, _) in drawn]
    targets = [normalize(decode_line(t, tgt, number, encoding_errors)[0]) for number, (_, t) in drawn]
    return sources, targets

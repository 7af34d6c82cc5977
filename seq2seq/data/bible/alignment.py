"""Monotone alignment of two verse sequences by length and shared lexical keys.

Two Bibles numbered the same way can still disagree about which text a number holds: the RV1909
keeps the Hebrew verse numbering in about ten chapters, so its Num 13:2 is the WEB's Num 13:1.
A dynamic program over the verses (Gale & Church's, with beads 1-1, 1-0, 0-1, 2-1, 1-2, 2-2)
finds where the texts correspond. Two signals score a pair: translations have a stable length
ratio, and where both modules tag words with Strong's numbers, translations share most of them
(KJV against RV1909: Jaccard 0.80 on average for the same verse, about 0.10 for a neighbour).
Length alone cannot place shifts in poetry such as Job 39, whose verses all have about the same
length; the shared keys can. A pair whose
references agree gets a small bonus so numbering is only left when the evidence insists.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

_SKIP_COST = 6.0  # leaving a verse with text unpaired
_BEADS: tuple[tuple[int, int, float], ...] = (
    (1, 1, 0.0),
    (1, 0, _SKIP_COST),
    (0, 1, _SKIP_COST),
    (2, 1, 3.0),
    (1, 2, 3.0),
    (2, 2, 4.5),
)
_SAME_REF_BONUS = 1.0  # cost saved by a 1-1 pair whose references agree
_EMPTY_SKIP_COST = 0.1  # leaving an empty verse unpaired is almost free
_LENGTH_COST_CAP = 8.0  # one terrible pair costs no more than a skip and a bit
_KEY_WEIGHT = 8.0  # cost per unit of Jaccard similarity below _KEY_NEUTRAL
_KEY_NEUTRAL = 0.4


@dataclass(frozen=True)
class Segment:
    """What the aligner knows about one verse."""

    ref: str
    length: int
    keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LengthModel:
    """Gale & Church: b's length is ``ratio`` times a's, with variance ``variance`` per character."""

    ratio: float
    variance: float

    def z(self, a_chars: int, b_chars: int) -> float:
        mean_length = (a_chars + b_chars / self.ratio) / 2
        return (b_chars - self.ratio * a_chars) / math.sqrt(self.variance * max(mean_length, 1.0))


@dataclass(frozen=True)
class Bead:
    """Consecutive verses of a (``a``) and of b (``b``) that translate each other; one side may be empty."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    z: float  # length deviation in standard deviations (0 when a side is empty)
    similarity: float | None  # Jaccard similarity of the keys, None when a side has none


def fit_length_model(a_lengths: Sequence[int], b_lengths: Sequence[int]) -> LengthModel:
    """Robust estimate from index-wise pairs, most of which are translations of each other."""
    pairs = [(a, b) for a, b in zip(a_lengths, b_lengths) if a and b]
    if len(pairs) < 2:
        return LengthModel(ratio=1.0, variance=6.8)  # Gale & Church's published value
    ratio = sum(b for _, b in pairs) / sum(a for a, _ in pairs)
    scaled = [(b - ratio * a) ** 2 / ((a + b / ratio) / 2) for a, b in pairs]
    return LengthModel(ratio=ratio, variance=max(statistics.median(scaled) / 0.455, 0.5))  # chi2(1) median


def align(a: Sequence[Segment], b: Sequence[Segment], *, model: LengthModel, band: int = 6) -> list[Bead]:
    """Cheapest monotone path of beads covering both sequences.

    The search stays within ``band`` verses of the diagonal scaled to both lengths, which keeps it
    linear in the number of verses. When the best path runs along the edge of the band, the true
    one may lie outside it, so the search is repeated with the band doubled.
    """
    while True:
        beads, widest = _align_in_band(a, b, model=model, band=band)
        if widest < band - 1 or band >= max(len(a), len(b)):
            return beads
        log.debug("alignment touched the band edge (%d verses); retrying with %d", band, 2 * band)
        band *= 2


def _align_in_band(
    a: Sequence[Segment], b: Sequence[Segment], *, model: LengthModel, band: int
) -> tuple[list[Bead], int]:
    """Best path within the band, and how far from the diagonal it strays."""
    n, m = len(a), len(b)
    bits: dict[str, int] = {}
    a_spans, b_spans = _Spans(a, bits), _Spans(b, bits)
    cost: dict[tuple[int, int], float] = {(0, 0): 0.0}
    back: dict[tuple[int, int], tuple[int, int]] = {}
    for i in range(n + 1):
        centre = round(i * m / n) if n else 0
        for j in range(max(0, centre - band), min(m, centre + band) + 1):
            best, best_step = math.inf, (0, 0)
            for di, dj, fixed in _BEADS:
                previous = cost.get((i - di, j - dj))
                if previous is not None:
                    step = previous + _bead_cost(a_spans, b_spans, i, j, di, dj, fixed, model)
                    if step < best:
                        best, best_step = step, (di, dj)
            if best < math.inf and (i, j) != (0, 0):
                cost[(i, j)], back[(i, j)] = best, best_step
    if (n, m) not in cost:
        return [], band  # the end lies outside the band: widen it
    return _trace(back, a_spans, b_spans, model, n, m)


class _Spans:
    """Lengths, keys and references of the spans of 0, 1 or 2 segments ending before each index.

    Keys become bit masks over a vocabulary shared by both sides (``bits``): Jaccard similarity
    is then two integer operations, several times faster than set operations in the inner loop.
    """

    def __init__(self, segments: Sequence[Segment], bits: dict[str, int]) -> None:
        masks = [sum(1 << bits.setdefault(key, len(bits)) for key in s.keys) for s in segments]
        self.refs = [s.ref for s in segments]
        self.length = [[0] * (len(segments) + 1) for _ in range(3)]
        self.keys = [[0] * (len(segments) + 1) for _ in range(3)]
        for end in range(1, len(segments) + 1):
            self.length[1][end], self.keys[1][end] = segments[end - 1].length, masks[end - 1]
            if end >= 2:
                self.length[2][end] = self.length[1][end - 1] + segments[end - 1].length
                self.keys[2][end] = masks[end - 2] | masks[end - 1]


def _mask_jaccard(a: int, b: int) -> float | None:
    return (a & b).bit_count() / (a | b).bit_count() if a and b else None


def _bead_cost(
    a: _Spans, b: _Spans, i: int, j: int, di: int, dj: int, fixed: float, model: LengthModel
) -> float:
    """Cost of the bead made of a's ``di`` verses ending before ``i`` and b's ``dj`` ending before ``j``."""
    a_chars, b_chars = a.length[di][i], b.length[dj][j]
    if di == 0 or dj == 0:
        return _EMPTY_SKIP_COST if a_chars + b_chars == 0 else fixed
    if a_chars == 0 or b_chars == 0:
        return fixed + 2 * _SKIP_COST  # pairing text with nothing is worse than skipping it
    z = model.z(a_chars, b_chars)
    total = fixed + min(z * z / 2, _LENGTH_COST_CAP)
    similarity = _mask_jaccard(a.keys[di][i], b.keys[dj][j])
    if similarity is not None:
        total += _KEY_WEIGHT * (_KEY_NEUTRAL - similarity)
    if di == 1 and dj == 1 and a.refs[i - 1] == b.refs[j - 1]:
        total -= _SAME_REF_BONUS
    return total


def _trace(
    back: dict[tuple[int, int], tuple[int, int]], a: _Spans, b: _Spans, model: LengthModel, n: int, m: int
) -> tuple[list[Bead], int]:
    beads: list[Bead] = []
    i, j = n, m
    widest = 0
    while (i, j) != (0, 0):
        widest = max(widest, abs(j - round(i * m / n)))
        di, dj = back[(i, j)]
        a_chars, b_chars = a.length[di][i], b.length[dj][j]
        z = model.z(a_chars, b_chars) if a_chars and b_chars else 0.0
        similarity = _mask_jaccard(a.keys[di][i], b.keys[dj][j]) if di and dj else None
        beads.append(Bead(tuple(range(i - di, i)), tuple(range(j - dj, j)), z, similarity))
        i, j = i - di, j - dj
    beads.reverse()
    return beads, widest

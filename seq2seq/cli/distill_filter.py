"""seq2seq-distill's filter: which of the teacher's translations to leave out of the student's corpus.

Each pair carries the teacher's score of its own translation: the mean log-probability per target
token, eos included (`mean_log_prob`, as `seq2seq-translate confidence=true` reports it), which is the
negative of the per-token cross-entropy that Bergamot's cross-entropy filter ranks by. Low scores mark
the teacher's worst outputs: hallucinations, copies, loops, truncations. The chunks keep every pair, so
a rerun with another filter rewrites the corpus from them without translating anything again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from seq2seq.cli.config.setting_checks import number_setting
from seq2seq.errors import UserError

SCORE_SUFFIX = "scores"  # the chunk file (and corpus file) of the teacher's scores
SCORE_FORMAT = "{:.6f}"  # what is written; the filter ranks these written values


@dataclass(frozen=True)
class ScoreFilter:
    """drop_fraction: the lowest-scoring share of pairs left out (0: none); min_score: pairs scoring
    below it left out (None: no threshold). A pair either rule drops is dropped."""

    drop_fraction: float = 0.0
    min_score: float | None = None

    @property
    def active(self) -> bool:
        return self.drop_fraction > 0 or self.min_score is not None


def read_filter(setting: Any) -> ScoreFilter:
    """`filter` of the config ({drop_fraction, min_score}), checked."""
    known = {"drop_fraction", "min_score"}
    unknown = sorted(set(setting or {}) - known)
    if unknown:
        raise UserError(f"filter has unknown keys {unknown}; it takes {sorted(known)}")
    fraction = number_setting((setting or {}).get("drop_fraction", 0.0), setting="filter.drop_fraction",
                              kind=float, minimum=0.0, maximum=0.99)  # fmt: skip
    threshold = (setting or {}).get("min_score")
    if threshold is not None:
        threshold = number_setting(threshold, setting="filter.min_score", kind=float, minimum=-math.inf,
                                   maximum=0.0)  # fmt: skip
    return ScoreFilter(drop_fraction=fraction, min_score=threshold)


def dropped_pairs(scores: np.ndarray, rule: ScoreFilter) -> np.ndarray:
    """True for each pair the rule drops. drop_fraction drops floor(fraction * n) pairs: the lowest
    scores, and among equal scores the earlier line first, so the pairs kept are the same whatever the
    chunking. Shapes: scores (N,) -> (N,) bool."""
    drop = np.zeros(len(scores), dtype=bool)
    count = dropped_count(rule.drop_fraction, len(scores))
    if count:
        order = np.argsort(scores, kind="stable")  # by score, then by line
        drop[order[:count]] = True
    if rule.min_score is not None:
        drop |= scores < rule.min_score
    return drop


def dropped_count(fraction: float, pairs: int) -> int:
    """floor(fraction * pairs) in exact arithmetic on the fraction as written: 0.29 of 100 pairs is 29,
    where the binary float product 0.29 * 100 = 28.999999999999996 would floor to 28. repr() of a float
    is the shortest decimal that reads back as it, i.e. what the user typed."""
    return math.floor(Fraction(repr(float(fraction))) * pairs)


def format_score(value: float | None) -> str:
    """A pair's score as written (a translation without one, e.g. an empty one, never reaches here)."""
    if value is None or not math.isfinite(value):
        raise UserError("the teacher gave a translation no finite score; report this with the command line")
    return SCORE_FORMAT.format(value)


__all__ = ["SCORE_SUFFIX", "ScoreFilter", "dropped_count", "dropped_pairs", "format_score", "read_filter"]

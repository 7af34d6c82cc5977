"""Distillation's filter: which of the teacher's translations to leave out of the student's corpus.

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

from seq2seq.corpus_translation.output_dir import OutputDir
from seq2seq.errors import UserError
from seq2seq.files import atomic_output

SCORE_SUFFIX = "scores"  # the chunk file (and corpus file) of the teacher's scores
SCORE_FORMAT = "{:.6f}"  # what is written; the filter ranks these written values
DROPPED_FILE = "dropped.tsv"
MOST_DROPPED = 0.99  # drop_fraction's largest value: a corpus keeps at least a few pairs


@dataclass(frozen=True)
class ScoreFilter:
    """drop_fraction: the lowest-scoring share of pairs left out (0: none); min_score: pairs scoring
    below it left out (None: no threshold). A pair either rule drops is dropped."""

    drop_fraction: float = 0.0
    min_score: float | None = None

    def __post_init__(self) -> None:
        fraction = _real(self.drop_fraction, "filter.drop_fraction")
        if not 0.0 <= fraction <= MOST_DROPPED:
            raise UserError(f"filter.drop_fraction={self.drop_fraction!r} must be within [0, {MOST_DROPPED}]")
        if self.min_score is not None and _real(self.min_score, "filter.min_score") > 0.0:
            raise UserError(f"filter.min_score={self.min_score!r} must be at most 0 (a mean log-probability)")
        object.__setattr__(self, "drop_fraction", fraction)  # 0 and 0.0 alike in report.json
        if self.min_score is not None:
            object.__setattr__(self, "min_score", float(self.min_score))

    @property
    def active(self) -> bool:
        return self.drop_fraction > 0 or self.min_score is not None


def _real(value: Any, setting: str) -> float:
    """A finite number (not a bool), or a one-line error naming the setting."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"{setting}={value!r} must be a finite number")
    return float(value)


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


def chunk_lines(out: OutputDir, index: int, suffix: str) -> list[str]:
    return out.chunk_file(index, suffix).read_text(encoding="utf-8").split("\n")[:-1]


def write_filtered_corpus(out: OutputDir, chunks: int, rule: ScoreFilter) -> dict[str, Any]:
    """<prefix>.<src>, <prefix>.<tgt>, <prefix>.scores: the pairs the filter keeps, in input order (all of
    them without a filter), and dropped.tsv (score, source, translation) the others; the counts. The
    chunks' files are (source, translation, score): out.files is (src, tgt, SCORE_SUFFIX)."""
    out.check_complete(chunks)
    scores = np.concatenate([np.array([float(s) for s in chunk_lines(out, i, SCORE_SUFFIX)], dtype=np.float64)
                             for i in range(chunks)] or [np.zeros(0)])  # fmt: skip
    drop = dropped_pairs(scores, rule)
    files = [atomic_output(out.corpus_file(suffix), "w", encoding="utf-8") for suffix in out.files]
    rejected = atomic_output(out.root / DROPPED_FILE, "w", encoding="utf-8")
    first = 0
    with files[0] as src, files[1] as tgt, files[2] as kept_scores, rejected as dropped:
        for index in range(chunks):
            columns = [chunk_lines(out, index, suffix) for suffix in out.files]
            for row, (source, target, score) in enumerate(zip(*columns), start=first):
                if drop[row]:
                    dropped.write(f"{score}\t{source}\t{target}\n")
                    continue
                for stream, text in zip((src, tgt, kept_scores), (source, target, score)):
                    stream.write(text + "\n")
            first += len(columns[0])
    kept = scores[~drop]
    return {
        "drop_fraction": rule.drop_fraction, "min_score": rule.min_score,
        "kept": len(kept), "dropped": int(drop.sum()),
        "lowest_kept_score": float(kept.min()) if len(kept) else None,
        "mean_score_kept": float(kept.mean()) if len(kept) else None,
        "mean_score_all": float(scores.mean()) if len(scores) else None,
    }  # fmt: skip


__all__ = [
    "DROPPED_FILE",
    "SCORE_SUFFIX",
    "ScoreFilter",
    "dropped_count",
    "dropped_pairs",
    "format_score",
    "write_filtered_corpus",
]

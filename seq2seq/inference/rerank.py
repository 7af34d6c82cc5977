"""A quality estimate on every hypothesis, and n-best lists re-ranked by it.

The scorer is anything with `score(sources, translations) -> [float | None]` (seq2seq.qe's
QualityEstimator: an encoder-only model predicting each translation's sentence chrF / 100), so this
layer needs no QE code. Scores are attached per searched piece: its source text (the piece's tokens,
detokenized) and each n-best hypothesis' text, in one call.

Re-ranking orders each n-best list by `score + weight * qe`, where `score` is the search's (the summed
log-probability over the length penalty). The weight trades the model's view for the QE model's; it is
tuned on dev data (benchmarks/qe.py prints the best one) and 0 keeps the beam's order.

The settings are the CLI's: `qe_checkpoint` (the QE model), `rerank` ("qe" or None) and `rerank_weight`.
In Python `qe_checkpoint=` takes the loaded model (`QualityEstimator.from_checkpoint(path)`): this layer
sits below seq2seq.qe and does not import it; the CLI loads the path it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError

RERANKS = ("qe",)


@runtime_checkable
class QualityScorer(Protocol):
    def score(self, sources: Sequence[str], translations: Sequence[str]) -> list[float | None]: ...


def attach_quality(
    scorer: QualityScorer,
    sources: Sequence[str],
    results: list[list[Hypothesis]],
    detokenize: Callable[[Sequence[int]], str],
) -> None:
    """Set `qe` on every hypothesis of `results` (one n-best list per entry of `sources`, the piece texts)."""
    pairs = [(source, detokenize(h.tokens)) for source, nbest in zip(sources, results) for h in nbest]
    if not pairs:
        return
    scores = iter(scorer.score([s for s, _ in pairs], [t for _, t in pairs]))
    for nbest in results:
        for hypothesis in nbest:
            hypothesis.qe = next(scores)


def check_weight(weight: float | None) -> float | None:
    """A re-ranking weight: None (off) or a finite number; anything else is a one-line error."""
    if weight is None:
        return None
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise UserError(
            f"rerank_weight={weight!r} must be a finite number (e.g. 1.0), or null for no re-ranking"
        )
    return float(weight)


def loaded_scorer(qe_checkpoint: object) -> QualityScorer | None:
    """The QE model a Python caller passes as qe_checkpoint= (None: none); a path is a one-line error
    naming how to load it."""
    if qe_checkpoint is None or isinstance(qe_checkpoint, QualityScorer):
        return qe_checkpoint
    if isinstance(qe_checkpoint, (str, Path)):
        raise UserError(f"qe_checkpoint={str(qe_checkpoint)!r}: in Python pass the loaded QE model, "
                        "qe_checkpoint=QualityEstimator.from_checkpoint(path) (from seq2seq.qe import "
                        "QualityEstimator)")  # fmt: skip
    raise UserError(f"qe_checkpoint= takes a QE model with score(sources, translations) (seq2seq.qe's "
                    f"QualityEstimator), not {type(qe_checkpoint).__name__}")  # fmt: skip


def rerank_setting(rerank: str | None, weight: float | None, *, has_qe: bool) -> float | None:
    """rerank=qe's weight (None without re-ranking; 1.0 when not given), checked before any model loads:
    rerank=qe needs a QE model (qe_checkpoint=)."""
    if rerank is None:
        return None
    if rerank not in RERANKS:
        raise UserError(f"rerank={rerank!r} is not supported; choose qe (with qe_checkpoint=), or null")
    if not has_qe:
        raise UserError("rerank=qe needs a QE model: pass qe_checkpoint= (seq2seq-qe-train's best.pt)")
    return check_weight(1.0 if weight is None else weight)


def rerank(results: list[list[Hypothesis]], weight: float, keep: int) -> list[list[Hypothesis]]:
    """Each n-best list by score + weight * qe, best first, cut to `keep` (a hypothesis without a QE score
    counts as 0). In a constrained search, hypotheses that met more phrases stay first."""

    def key(hypothesis: Hypothesis) -> tuple[int, float]:
        return hypothesis.constraints_met or 0, hypothesis.score + weight * (hypothesis.qe or 0.0)

    return [sorted(nbest, key=key, reverse=True)[:keep] for nbest in results]


__all__ = [
    "RERANKS",
    "QualityScorer",
    "attach_quality",
    "check_weight",
    "loaded_scorer",
    "rerank",
    "rerank_setting",
]

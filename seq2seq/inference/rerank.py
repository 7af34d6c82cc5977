"""A quality estimate on every hypothesis, and n-best lists re-ranked by it.

The scorer is anything with `score(sources, translations) -> [float | None]` (seq2seq.qe's
QualityEstimator: an encoder-only model predicting each translation's sentence chrF / 100), so this
layer needs no QE code. Scores are attached per searched piece: its source text (the piece's tokens,
detokenized) and each n-best hypothesis' text, in one call.

Re-ranking orders each n-best list by `score + weight * qe`, where `score` is the search's (the summed
log-probability over the length penalty). The weight trades the model's view for the QE model's; it is
tuned on dev data (benchmarks/qe.py prints the best one) and 0 keeps the beam's order.

The settings are the CLI's: `qe_checkpoint` (the QE model), `rerank` ("qe" or None) and `rerank_weight`.
`qe_checkpoint=` takes a path (Translator.from_checkpoint loads it: seq2seq.inference.quality) or, in
Python, a loaded model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError, warn_renamed_keyword
from seq2seq.inference.quality import QualityEstimator

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
    """The loaded QE model a Python caller passes as qe_checkpoint= (None: none; Translator.from_checkpoint
    loads a path itself)."""
    if qe_checkpoint is None or isinstance(qe_checkpoint, QualityScorer):
        return qe_checkpoint
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


def qe_policy(
    qe_checkpoint: str | Path | QualityScorer | None, rerank: str | None, weight: float | None,
    quality: QualityScorer | None, *, device: torch.device, precision: str,
) -> dict[str, Any]:  # fmt: skip
    """A Translator's `quality` and `rerank_weight` from from_checkpoint's QE settings: a path is loaded
    on `device` (after the settings are checked); warns (at its caller's caller) for the old names:
    `quality=`, and `rerank_weight=` alone, which used to re-rank."""
    if quality is not None:
        warn_renamed_keyword("quality", "qe_checkpoint", depth=2)
        if qe_checkpoint is None:
            qe_checkpoint = quality
    if rerank is None and weight is not None:
        warn_renamed_keyword("rerank_weight= without rerank=", 'rerank="qe" with rerank_weight=', depth=2)
        rerank = "qe"
    if isinstance(qe_checkpoint, (str, Path)):
        rerank_setting(rerank, weight, has_qe=True)  # checked before any model loads
        qe_checkpoint = QualityEstimator.from_checkpoint(qe_checkpoint, device=device, precision=precision)
    scorer = loaded_scorer(qe_checkpoint)
    return {"quality": scorer, "rerank_weight": rerank_setting(rerank, weight, has_qe=scorer is not None)}


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
    "qe_policy",
    "rerank",
    "rerank_setting",
]

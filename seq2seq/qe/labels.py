"""QE labels: how close a translation is to its reference, per sentence, as a number in [0, 1].

chrF (the default): sacrebleu's sentence-level chrF / 100, character n-grams, robust on one sentence.
TER: 1 - min(TER / 100, 1), so that 1 is a perfect translation for both.
"""

from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics import CHRF, TER

from seq2seq.errors import UserError

METRICS = ("chrf", "ter")


def sentence_labels(
    translations: Sequence[str], references: Sequence[str], metric: str = "chrf"
) -> list[float]:
    """One label per (translation, reference) pair, in [0, 1]; higher is better."""
    if metric not in METRICS:
        raise UserError(f"qe label metric={metric!r} is not supported; choose {' or '.join(METRICS)}")
    if len(translations) != len(references):
        raise UserError(f"{len(translations)} translations but {len(references)} references; pass one each")
    if metric == "chrf":
        chrf = CHRF()
        return [chrf.sentence_score(hyp, [ref]).score / 100 for hyp, ref in zip(translations, references)]
    ter = TER()
    return [
        1.0 - min(ter.sentence_score(hyp, [ref]).score / 100, 1.0)
        for hyp, ref in zip(translations, references)
    ]


__all__ = ["METRICS", "sentence_labels"]

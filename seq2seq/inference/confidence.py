"""The model's confidence in a translation: each output token's probability and a sentence summary.

One definition for the Translator, seq2seq-translate and seq2seq-serve:
  * token log-probabilities: a hypothesis' `positional_scores`, the model's own log-probability of each
    output token given the source and the tokens before it, the final eos included (constraints only
    forbid tokens, forced prefix tokens keep theirs, sampling chooses with temperature / top-k / top-p
    but records the untempered value; an ensemble's is the mean of its members' log-probabilities; a
    search on a vocabulary shortlist, normalised over each sentence's candidates, has its outputs
    scored again over the whole vocabulary: seq2seq.decode.teacher_forcing);
  * `token_probs`: their exponents, one per output piece plus one for "</s>";
  * `mean_log_prob`: their mean; `confidence` = exp(mean_log_prob), the geometric mean of the token
    probabilities, in (0, 1].
A text translated in pieces (long_lines=split) has its pieces' tokens and log-probabilities
concatenated, every piece's "</s>" included, and the mean taken over all of them. An empty text has
no tokens: confidence and mean_log_prob are None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.hypotheses import Hypothesis

DEPRECATED_TEXT_FIELD = "translation"  # a JSON record's "text" under its old name, sent for one release
JSON_DIGITS = 6  # significant digits of the numbers in JSON answers (the CLI's jsonl, the server)


@dataclass(frozen=True)
class Confidence:
    """A translation's confidence (module docstring); all None / empty for an empty text."""

    mean_log_prob: float | None = None
    confidence: float | None = None
    tokens: list[str] = field(default_factory=list)  # output pieces, each piece's "</s>" included
    token_probs: list[float] = field(default_factory=list)  # one per entry of `tokens`

    def to_json(self) -> dict[str, Any]:
        """The four fields as JSON values, numbers rounded to JSON_DIGITS significant digits."""
        return {
            "confidence": _rounded(self.confidence),
            "mean_log_prob": _rounded(self.mean_log_prob),
            "tokens": list(self.tokens),
            "token_probs": [_rounded(p) for p in self.token_probs],
        }


@dataclass(frozen=True)
class Translation:
    """One translation: what `Translator.translate` returns per text, `str()` of it its text. `score` is
    the search's (log-probability over the length penalty; the sum of the pieces' for a split text); the
    confidence fields are `Confidence`'s, None / empty unless the search was asked for them. With
    nbest > 1, `nbest` holds the text's alternatives, best first, the first equal to this one (equality
    compares the translation, not its alternatives: a list that held itself could not be compared)."""

    text: str
    score: float
    confidence: float | None = None
    mean_log_prob: float | None = None
    tokens: list[str] = field(default_factory=list)
    token_probs: list[float] = field(default_factory=list)
    qe: float | None = None  # the QE model's estimate (seq2seq.inference.rerank), when the Translator has one
    constraints_met: int | None = (
        None  # phrases met, when the text had constraints (seq2seq.decode.constrained)
    )
    constraints_total: int | None = None  # phrases it had
    engine: str | None = None  # the engine that translated it, when several could (exported models)
    nbest: list[Translation] = field(default_factory=list, compare=False, repr=False)

    def __str__(self) -> str:
        return self.text

    @classmethod
    def of(
        cls, text: str, score: float, confidence: Confidence, qe: float | None = None, **outcome: Any
    ) -> Translation:
        """`outcome`: constraints_met, constraints_total, engine (Translator.translations fills them)."""
        return cls(text, score, confidence.confidence, confidence.mean_log_prob, confidence.tokens,
                   confidence.token_probs, qe, **outcome)  # fmt: skip

    def details(self) -> Confidence:
        return Confidence(self.mean_log_prob, self.confidence, self.tokens, self.token_probs)

    def to_json(self, *, confidence: bool = True) -> dict[str, Any]:
        """{"text"}, then (with `confidence`) "confidence", "mean_log_prob", "tokens" and "token_probs",
        as seq2seq-translate's jsonl lines and seq2seq-serve's answers write it; "qe" when a QE model
        scored it; "constraints_met", "constraints_total" and "engine" when it had constraints; last
        "translation", the old name of "text" (the same value), for one release. `score` is the caller's
        to add (`nbest_json` adds it)."""
        record: dict[str, Any] = {"text": self.text}
        if confidence:
            record.update(self.details().to_json())
        if self.qe is not None:
            record["qe"] = _rounded(self.qe)
        if self.constraints_total is not None:
            record["constraints_met"], record["constraints_total"] = (
                self.constraints_met,
                self.constraints_total,
            )
        if self.engine is not None:
            record["engine"] = self.engine
        record[DEPRECATED_TEXT_FIELD] = self.text  # the old name of "text", still sent for one release
        return record


def nbest_json(ranked: Sequence[Translation], *, confidence: bool) -> list[dict[str, Any]]:
    """A text's n-best translations as the one n-best shape of seq2seq-translate's jsonl lines and
    seq2seq-serve's answers: a list of records, best first, each `to_json()` with "score" (4 decimals)
    after "text"."""
    records = []
    for translation in ranked:
        record = translation.to_json(confidence=confidence)
        records.append({"text": record.pop("text"), "score": round(translation.score, 4), **record})
    return records


def token_log_probs(hypothesis: Hypothesis) -> list[float]:
    """The hypothesis' per-token log-probabilities (its tokens, then eos), checked to be there."""
    scores = hypothesis.positional_scores
    if scores is None or len(scores) != len(hypothesis.tokens) + 1:
        raise ValueError("the hypothesis has no per-token log-probabilities; search with confidence=True")
    return [float(score) for score in scores]


def confidence_of(pieces: Sequence[Hypothesis], tokenizer: TextTokenizer) -> Confidence:
    """The confidence of one text from its pieces' hypotheses, in order (one for a text that was not
    split, none for an empty text)."""
    tokens: list[str] = []
    log_probs: list[float] = []
    eos = tokenizer.id_to_piece(tokenizer.eos_id)
    for hypothesis in pieces:
        log_probs.extend(token_log_probs(hypothesis))
        tokens.extend([*(tokenizer.id_to_piece(i) for i in hypothesis.tokens), eos])
    if not log_probs:
        return Confidence()
    mean = math.fsum(log_probs) / len(log_probs)
    return Confidence(mean, math.exp(mean), tokens, [math.exp(value) for value in log_probs])


def _rounded(value: float | None) -> float | None:
    """`value` to JSON_DIGITS significant digits; None for None and for what JSON cannot hold (-inf)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{JSON_DIGITS}g}")


__all__ = ["JSON_DIGITS", "Confidence", "Translation", "confidence_of", "nbest_json", "token_log_probs"]

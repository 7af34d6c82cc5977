"""A search's hypotheses as the Translations a caller gets: per text, its pieces' hypotheses joined rank
by rank, with their QE score, their constraint outcome and, with nbest > 1, the text's alternatives.

A text split into pieces (long_lines=split) joins its pieces' k-th hypotheses: texts with spaces, scores
summed, confidence over all their tokens, QE scores averaged; it has as many ranks as its shallowest
piece's n-best list. An empty text has one rank with no pieces: "" with score 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.inference.confidence import Confidence, Translation, confidence_of


def by_rank(
    owners: Sequence[int], n_texts: int, results: list[list[Hypothesis]]
) -> list[list[list[Hypothesis]]]:
    """Per text, per rank k (as deep as its shallowest piece's n-best list), the pieces' k-th hypotheses
    in order; an empty text has one rank with no pieces. `owners[i]`: the text of piece i."""
    pieces: list[list[list[Hypothesis]]] = [[] for _ in range(n_texts)]
    for owner, nbest in zip(owners, results):
        if nbest:
            pieces[owner].append(nbest)
    ranks = []
    for parts in pieces:
        depth = min((len(nbest) for nbest in parts), default=1)
        ranks.append([[nbest[k] for nbest in parts] for k in range(depth)])
    return ranks


def constraint_outcome(parts: list[Hypothesis]) -> dict[str, Any]:
    """A text's constraint fields for its Translation: phrases met and asked for (summed over its pieces,
    when a constrained search found them) and the engine that translated it (when one says)."""
    outcome: dict[str, Any] = {}
    if any(hypothesis.constraints_total is not None for hypothesis in parts):
        outcome["constraints_met"] = sum(hypothesis.constraints_met or 0 for hypothesis in parts)
        outcome["constraints_total"] = sum(hypothesis.constraints_total or 0 for hypothesis in parts)
    engines = {hypothesis.engine for hypothesis in parts if hypothesis.engine}
    if engines:
        outcome["engine"] = "+".join(sorted(engines))
    return outcome


def quality_of(parts: list[Hypothesis]) -> float | None:
    """A text's QE score: its pieces' mean (None unless every piece has one)."""
    scores = [hypothesis.qe for hypothesis in parts]
    return None if not scores or None in scores else sum(scores) / len(scores)  # type: ignore[arg-type]


def joined(
    parts: list[Hypothesis],
    detokenize: Callable[[Sequence[int]], str],
    separators: Sequence[str] | None = None,
) -> tuple[str, float]:
    """(text, score) of the pieces' hypotheses: texts joined with spaces (or, piece after piece, with
    `separators`: the whitespace between a paragraph's sentences), scores summed."""
    texts = [detokenize(hypothesis.tokens) for hypothesis in parts]
    score = sum(hypothesis.score for hypothesis in parts)
    if separators is None or len(separators) != len(texts) - 1:
        return " ".join(text for text in texts if text), score
    pieces = [texts[0]] if texts else []
    for separator, text in zip(separators, texts[1:]):
        pieces += [separator, text]
    return "".join(pieces), score


def translation_of(
    parts: list[Hypothesis],
    detokenize: Callable[[Sequence[int]], str],
    tokenizer: TextTokenizer,
    *,
    confidence: bool,
    separators: Sequence[str] | None = None,
) -> Translation:
    """One rank of one text as a Translation; its confidence fields only with `confidence` (the
    hypotheses must then carry their per-token log-probabilities); `separators`: as `joined` takes them."""
    details = confidence_of(parts, tokenizer) if confidence else Confidence()
    text, score = joined(parts, detokenize, separators)
    return Translation.of(text, score, details, quality_of(parts), **constraint_outcome(parts))


def with_alternatives(ranked: list[Translation]) -> Translation:
    """A text's best Translation carrying its whole n-best list (best first) in `nbest`."""
    return dataclasses.replace(ranked[0], nbest=list(ranked))


__all__ = ["by_rank", "constraint_outcome", "joined", "quality_of", "translation_of", "with_alternatives"]

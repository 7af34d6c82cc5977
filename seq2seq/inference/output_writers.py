"""Translations written as lines: per input line, tab-separated columns (`output_lines`), one JSON value
(`jsonl_lines`) or Moses n-best lines (`nbest_lines`), as `LineFormat` says; and the JSON report of a
run (`write_report`). seq2seq-translate writes these; so can any caller of the pipeline."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation, confidence_of, nbest_json
from seq2seq.inference.languages import forced_codes, without_language_code
from seq2seq.inference.prepared import Prepared

CONFIDENCE_FORMATS = ("tsv", "jsonl")


@dataclass(frozen=True)
class LineFormat:
    """What each output line holds: the score column (`scores`), the confidence ("tsv": a column,
    "jsonl": a JSON value per line, None: none) and the alignment column (`alignment`)."""

    scores: bool = False
    confidence: str | None = None
    alignment: bool = False

    def __post_init__(self) -> None:
        if self.confidence is not None and self.confidence not in CONFIDENCE_FORMATS:
            raise UserError(f"confidence_format={self.confidence!r} is not supported; choose "
                            f"{' or '.join(CONFIDENCE_FORMATS)}")  # fmt: skip


def format_line(
    translation: Translation, *, scores: bool, confidence: bool, alignment: str | None, qe: bool = False
) -> str:
    """The columns of one non-empty input line's output: the text, then (each when asked for) score,
    confidence, QE score and alignment, tab-separated. An empty translation has no QE score: its column
    is empty, so that the columns after it stay in place."""
    text = translation.text
    if scores:
        text += f"\t{translation.score:.4f}"
    if confidence:
        text += f"\t{translation.confidence:.4f}"
    if qe:
        text += "\t" if translation.qe is None else f"\t{translation.qe:.4f}"
    if alignment is not None:
        text += f"\t{alignment}"
    return text


@dataclass(frozen=True)
class TextResults:
    """Per text: its n-best Translations (the pipeline's), whether it had anything to translate, and its
    alignment column (None where none was asked for)."""

    ranked: list[list[Translation]]
    given: Sequence[bool]
    alignments: Sequence[str | None]

    def rows(self) -> zip:
        return zip(self.ranked, self.given, self.alignments)


def output_lines(line: LineFormat, texts: TextResults, *, qe: bool = False) -> list[str]:
    """One line per input line, its columns as `format_line` writes them. A split line's pieces are
    joined: texts with spaces, scores summed, the confidence over all their tokens, alignments with
    spaces (each piece's positions counted from its own start). A line with nothing to translate is its
    markup alone (a line of tags and placeholders only), else empty."""
    return [
        format_line(nbest[0], scores=line.scores, confidence=line.confidence == "tsv",
                    alignment=alignment if line.alignment else None, qe=qe) if found else nbest[0].text
        for nbest, found, alignment in texts.rows()
    ]  # fmt: skip


def jsonl_lines(line: LineFormat, texts: TextResults, *, nbest: int = 1) -> list[str]:
    """One JSON value per input line: with nbest = 1, an object {"text", "confidence", "mean_log_prob",
    "tokens", "token_probs"}, with "score" when `line.scores` and "alignment" when `line.alignment`; with
    nbest > 1, the list of such objects, best first, each with "score" (the server's n-best shape:
    seq2seq.inference.confidence.nbest_json). An empty input line has text "", confidence, mean_log_prob
    and score null and no tokens. The Translations need their confidence."""
    if nbest > 1:
        return [
            json.dumps(_nbest_records(ranked, given=found), ensure_ascii=False)
            for ranked, found, _ in texts.rows()
        ]
    lines = []
    for ranked, found, alignment in texts.rows():
        record = _record(ranked[0], score=line.scores, given=found)
        if line.alignment:
            record["alignment"] = alignment if found else None
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def _nbest_records(ranked: list[Translation], *, given: bool) -> list[dict[str, Any]]:
    """The n-best shape; an empty input line was not searched, so its one record's score is null."""
    records = nbest_json(ranked, confidence=True)
    if not given:
        records = [{**record, "score": None} for record in records]
    return records


def _record(translation: Translation, *, score: bool, given: bool) -> dict[str, Any]:
    record = translation.to_json()
    if score:
        record["score"] = round(translation.score, 4) if given else None
    return record


def nbest_lines(
    prepared: Prepared, results: list[list[Hypothesis]], src_tokenizer: TextTokenizer,
    tgt_tokenizer: TextTokenizer, *, confidence: bool = False,
) -> list[str]:  # fmt: skip
    """n-best lists in Moses format; a long line split into pieces lists each piece's hypotheses. With
    `confidence`, a fourth field: each hypothesis' confidence (empty for an empty input line)."""
    codes = forced_codes(src_tokenizer, tgt_tokenizer)  # a forced language code: no token of the text
    lines = []
    for owner, nbest in zip(prepared.owners, results):
        if not nbest:
            lines.append(f"{owner} |||  ||| 0.0000" + (" ||| " if confidence else ""))
        for hypothesis in nbest:
            text = tgt_tokenizer.decode(hypothesis.tokens)
            line = f"{owner} ||| {text} ||| {hypothesis.score:.4f}"
            if confidence:
                own = without_language_code(hypothesis, codes)
                line += f" ||| {confidence_of([own], tgt_tokenizer).confidence:.4f}"
            lines.append(line)
    return lines


def write_report(
    path: Path, settings: dict[str, Any], results: list[list[Hypothesis]], n_lines: int, seconds: float
) -> None:
    """Speed and settings of a translation run, as JSON (read by scripts/decode_and_score.sh):
    `settings` (the run's checkpoint, input, decode, ...) then the lines, seconds, speeds and threads,
    and what the constraints did."""
    tokens = sum(len(nbest[0].tokens) + 1 for nbest in results if nbest)
    report = {
        **settings,
        "lines": n_lines,
        "seconds": seconds,
        "sentences_per_second": n_lines / max(seconds, 1e-9),
        "tokens_per_second": tokens / max(seconds, 1e-9),
        "threads": torch.get_num_threads(),
    }
    constrained = constraint_report(results)
    if constrained is not None:
        report["constraints"] = constrained
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


def constraint_report(results: list[list[Hypothesis]]) -> dict[str, Any] | None:
    """Sentences with constraints, their phrases, how many were met, and which engine translated them."""
    best = [nbest[0] for nbest in results if nbest and nbest[0].constraints_total]
    if not best:
        return None
    engines: dict[str, int] = {}
    for hypothesis in best:
        engines[hypothesis.engine or "torch"] = engines.get(hypothesis.engine or "torch", 0) + 1
    return {
        "sentences": len(best),
        "phrases": sum(h.constraints_total or 0 for h in best),
        "met": sum(h.constraints_met or 0 for h in best),
        "engines": engines,
    }


def translation_lines(
    line: LineFormat, prepared: Prepared, results: list[list[Hypothesis]], texts: TextResults,
    tokenizers: tuple[TextTokenizer, TextTokenizer], *, qe: bool = False,
) -> list[str]:  # fmt: skip
    """The output's lines in the format asked for: JSON lines (confidence "jsonl"), Moses n-best lines
    (nbest > 1), else columns. `texts`: the pipeline's Translations of `prepared`'s texts (`results`)."""
    nbest = prepared.options.nbest
    if line.confidence == "jsonl":
        return jsonl_lines(line, texts, nbest=nbest)
    if nbest > 1:  # Moses n-best format: "line ||| translation ||| score"
        return nbest_lines(prepared, results, *tokenizers, confidence=line.confidence == "tsv")
    return output_lines(line, texts, qe=qe)


__all__ = [
    "CONFIDENCE_FORMATS",
    "LineFormat",
    "TextResults",
    "constraint_report",
    "format_line",
    "jsonl_lines",
    "nbest_lines",
    "output_lines",
    "translation_lines",
    "write_report",
]

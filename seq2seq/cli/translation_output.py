"""What seq2seq-translate writes: per input line, tab-separated columns (`output_lines`), one JSON value
(`jsonl_lines`) or Moses n-best lines (`nbest_lines`); and the JSON report of a run (`write_report`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from seq2seq.cli.attention_output import text_alignments
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.inference.confidence import Translation, confidence_of, nbest_json
from seq2seq.inference.translator import EncodedInput, Translator


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


def output_lines(
    cfg: DictConfig, translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]],
    *, confidence: bool = False,
) -> list[str]:  # fmt: skip
    """One line per input line, its columns as `format_line` writes them. A split line's pieces are
    joined: texts with spaces, scores summed, the confidence over all their tokens, alignments with
    spaces (each piece's positions counted from its own start). A line with nothing to translate is its
    markup alone (a line of tags and placeholders only), else empty."""
    qe = translator.quality is not None
    best = [nbest[0] for nbest in _translations(translator, encoded, results, confidence=confidence or qe)]
    alignments = text_alignments(cfg, translator, encoded, results)
    return [
        format_line(translation, scores=bool(cfg.scores), confidence=confidence,
                    alignment=alignment if cfg.alignment else None, qe=qe) if given else translation.text
        for translation, alignment, given in zip(best, alignments, _given(encoded))
    ]  # fmt: skip


def jsonl_lines(
    cfg: DictConfig, translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]]
) -> list[str]:
    """One JSON value per input line: with decode.nbest = 1, an object {"translation", "confidence",
    "mean_log_prob", "tokens", "token_probs"}, with "score" when scores=true and "alignment" when
    alignment=true; with decode.nbest > 1, the list of such objects, best first, each with "score" (the
    server's n-best shape: seq2seq.inference.confidence.nbest_json). An empty input line has translation
    "", confidence, mean_log_prob and score null and no tokens."""
    texts = translator.translations(encoded, results)  # per text, its Translations, best first
    if translator.options.nbest > 1:
        return [
            json.dumps(_nbest_records(ranked, given=given), ensure_ascii=False)
            for ranked, given in zip(texts, _given(encoded))
        ]
    alignments = text_alignments(cfg, translator, encoded, results)
    lines = []
    for ranked, alignment, given in zip(texts, alignments, _given(encoded)):
        record = _record(ranked[0], score=bool(cfg.scores), given=given)
        if cfg.alignment:
            record["alignment"] = alignment if given else None
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


def _translations(
    translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]], *, confidence: bool
) -> list[list[Translation]]:
    """Per text, its n-best Translations, with their confidence only when asked for."""
    if confidence:
        return translator.translations(encoded, results)
    return [
        [Translation(text, score) for text, score in ranked]
        for ranked in translator.join_pieces(encoded, results)
    ]


def _given(encoded: EncodedInput) -> list[bool]:
    """Per text, whether it had anything to translate (an empty or blank line has no tokens)."""
    given = [False] * encoded.n_texts
    for owner, source in zip(encoded.owners, encoded.sources):
        given[owner] = given[owner] or bool(source)
    return given


def nbest_lines(
    owners: list[int], results: list[list[Hypothesis]], translator: Translator, *, confidence: bool = False
) -> list[str]:
    """n-best lists in Moses format; a long line split into pieces lists each piece's hypotheses. With
    `confidence`, a fourth field: each hypothesis' confidence (empty for an empty input line)."""
    lines = []
    for owner, nbest in zip(owners, results):
        if not nbest:
            lines.append(f"{owner} |||  ||| 0.0000" + (" ||| " if confidence else ""))
        for hypothesis in nbest:
            text = translator.detokenize(hypothesis.tokens)
            line = f"{owner} ||| {text} ||| {hypothesis.score:.4f}"
            if confidence:
                own = translator.own_tokens(hypothesis)  # without a forced language code
                line += f" ||| {confidence_of([own], translator.tgt_tokenizer).confidence:.4f}"
            lines.append(line)
    return lines


def write_report(
    path: Path,
    cfg: DictConfig,
    decode: dict,
    results: list[list[Hypothesis]],
    n_lines: int,
    seconds: float,
    *,
    compiled: bool = False,
) -> None:
    """Speed and settings of this translation, as JSON (read by scripts/decode_and_score.sh)."""
    tokens = sum(len(nbest[0].tokens) + 1 for nbest in results if nbest)
    report = {
        "checkpoint": str(cfg.checkpoint),
        "input": str(cfg.input),
        "decode": decode,
        "precision": str(cfg.precision),
        "quantization": str(cfg.quantization),
        "compile": str(cfg.compile).lower(),
        "compiled": compiled,
        "device": str(cfg.device),
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
    cfg: DictConfig, translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]],
    *, confidence: str | None,
) -> list[str]:  # fmt: skip
    """The output's lines in the format asked for: JSON lines (confidence_format=jsonl), Moses n-best
    lines (decode.nbest > 1), else columns; `confidence`: "tsv", "jsonl" or None."""
    if confidence == "jsonl":
        return jsonl_lines(cfg, translator, encoded, results)
    if translator.options.nbest > 1:  # Moses n-best format: "line ||| translation ||| score"
        return nbest_lines(encoded.owners, results, translator, confidence=confidence == "tsv")
    return output_lines(cfg, translator, encoded, results, confidence=confidence == "tsv")

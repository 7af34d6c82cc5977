"""Distillation: the training sources and a teacher in, the teacher's translations out, as the corpus a
smaller student learns from (sequence-level knowledge distillation, Kim and Rush 2016).

    from seq2seq import Translator
    from seq2seq.corpus_translation import DistillSettings, ScoreFilter, distill

    teacher = Translator.from_checkpoint("runs/teacher/averaged.pt")  # en -> es
    report = distill(teacher, DistillSettings(
        checkpoint="runs/teacher/averaged.pt", input="train.en", output_dir="distilled",
        filter=ScoreFilter(drop_fraction=0.05)))
    report["filter"]["kept"]  # pairs in distilled/distill.en and distilled/distill.es

The teacher (one checkpoint, an ensemble, or an exported CTranslate2 directory) translates each line,
chunk by chunk as seq2seq.corpus_translation.chunks does it for back-translation too. `src_lang` /
`tgt_lang` are the teacher's direction (it reads src_lang, the input's language, and writes tgt_lang),
and name the corpus files distill.<src_lang> and distill.<tgt_lang>. Each pair keeps the teacher's score
of its translation (seq2seq.corpus_translation.score_filter), and the filter leaves the worst-scored
pairs out of the corpus; a rerun with another filter only rewrites the corpus.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from seq2seq.corpus_translation import output_dir as store
from seq2seq.corpus_translation.chunks import Job, translate_file
from seq2seq.corpus_translation.languages import model_languages, with_corpus_languages
from seq2seq.corpus_translation.run_record import fingerprint, log_skipped, summary, write_report
from seq2seq.corpus_translation.score_filter import (
    DROPPED_FILE,
    SCORE_SUFFIX,
    format_score,
    write_filtered_corpus,
)
from seq2seq.corpus_translation.settings import CheckedInput, DistillSettings, check_input
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.distill")
LAYOUT = store.DISTILLATION


def rows(lines: list[str], translations: list[Translation]) -> list[tuple[str, ...]]:
    """(source line, teacher's translation, its score) of every line whose translation is not empty."""
    return [(line, t.text, format_score(t.mean_log_prob)) for line, t in zip(lines, translations) if t.text]


JOB = Job(layout=LAYOUT, label="distill", log=log, rows=rows, confidence=True)


def distill(
    teacher: Translator, settings: DistillSettings, *, checked: CheckedInput | None = None
) -> dict[str, Any]:
    """Translate `settings.input` with `teacher` into settings.output_dir (resuming a run with the same
    settings there), and write the corpus the filter keeps; report.json's contents. `checked`: what
    `check_input(settings)` found, when the caller called it before loading the teacher (else it is called
    here)."""
    checked = checked or check_input(settings)
    if teacher.options.nbest != 1:
        raise UserError(f"decode.nbest={teacher.options.nbest}: distillation writes one translation "
                        "per line; use decode.nbest=1")  # fmt: skip
    langs = languages(settings, teacher)
    teacher = with_corpus_languages(teacher, reads=langs[0], writes=langs[1])
    out = store.OutputDir(settings.output_dir, *langs, SCORE_SUFFIX, layout=LAYOUT)
    with store.holding(settings.output_dir, LAYOUT):
        claim = fingerprint(teacher, settings, langs)
        stats, resumed = translate_file(JOB, teacher, settings, out, checked.lines, claim)
        kept = write_filtered_corpus(out, len(stats), settings.filter)
        outputs = {"src": out.corpus_file(langs[0]), "tgt": out.corpus_file(langs[1]),
                   "scores": out.corpus_file(SCORE_SUFFIX), "dropped": out.root / DROPPED_FILE}  # fmt: skip
        wall = time.perf_counter() - checked.started
        report = summary(teacher, settings, stats, resumed, outputs, wall)
        report["filter"] = kept
        path = write_report(report, settings.output_dir)
    log_summary(report, path)
    return report


def languages(settings: DistillSettings, teacher: Translator) -> tuple[str, str]:
    """(src_lang, tgt_lang): what the teacher reads and writes, the corpus's suffixes; by default the
    teacher's own languages."""
    checkpoint = settings.checkpoints[0]
    model = model_languages(teacher, checkpoint)
    src = settings.src_lang if settings.src_lang is not None else (model[0] if model else None)
    tgt = settings.tgt_lang if settings.tgt_lang is not None else (model[1] if model else None)
    if src is None or tgt is None:
        raise UserError(f"{checkpoint} names no languages; pass src_lang= (the language of the input) and "
                        "tgt_lang= (the language the teacher translates into)")  # fmt: skip
    if len({src, tgt, SCORE_SUFFIX}) != 3:
        raise UserError(f"src_lang={src} and tgt_lang={tgt} must differ from each other and from "
                        f"{SCORE_SUFFIX!r} (the scores file's suffix)")  # fmt: skip
    return src, tgt


def log_summary(report: dict[str, Any], path: Path) -> None:
    log_skipped(log, report)
    kept, outputs = report["filter"], report["outputs"]
    if kept["dropped"]:
        log.info("the filter dropped %d of %d pairs (lowest score kept %.3f); they are in %s",
                 kept["dropped"], kept["dropped"] + kept["kept"], kept["lowest_kept_score"],
                 outputs["dropped"])  # fmt: skip
    log.info("distilled %d sentences in %.1f s (%.1f sentences/s, engine %s): %d pairs in %s and %s; "
             "report %s", report["sentences"], report["seconds"], report["sentences_per_second"],
             report["engine"], kept["kept"], outputs["src"], outputs["tgt"], path)  # fmt: skip


__all__ = ["LAYOUT", "distill", "languages"]

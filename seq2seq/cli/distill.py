"""seq2seq-distill: the training sources and a teacher in, the teacher's translations out, as the corpus a
smaller student learns from (sequence-level knowledge distillation, Kim and Rush 2016).

seq2seq-distill checkpoint=runs/teacher/averaged.pt input=data/bible_en_es/train.en output_dir=distilled
seq2seq-distill checkpoint=[runs/a/averaged.pt,runs/b/averaged.pt] input=train.en output_dir=distilled
seq2seq-distill checkpoint=... input=train.en output_dir=distilled filter.drop_fraction=0.05

The teacher (one checkpoint, an ensemble, or an exported CTranslate2 directory) translates each line
with the `decode` group's search (beam 5, the teacher's tuned length penalty unless given), chunk by
chunk as seq2seq.cli.corpus_translation does it for back-translation too: memory flat in the file size,
a run stopped even by kill -9 resumes to the bytes an uninterrupted run writes, a rerun with another
teacher or search is refused by name. Each pair keeps the teacher's score of its translation
(seq2seq.cli.distill_filter), and the filter leaves the worst-scored pairs out of the corpus; a rerun
with another filter only rewrites the corpus.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf

from seq2seq.cli import corpus_translation as chunked
from seq2seq.cli import translated_corpus_dir as store
from seq2seq.cli.distill_filter import SCORE_SUFFIX, ScoreFilter, dropped_pairs, format_score, read_filter
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.confidence import Translation
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.distill")
LAYOUT = store.Layout(command="distill", prefix="distill", run="distillation")
DROPPED_FILE = "dropped.tsv"


def rows(lines: list[str], translations: list[Translation]) -> list[tuple[str, ...]]:
    """(source line, teacher's translation, its score) of every line whose translation is not empty."""
    return [(line, t.text, format_score(t.mean_log_prob)) for line, t in zip(lines, translations) if t.text]


JOB = chunked.Job(layout=LAYOUT, label="distill", log=log, rows=rows, confidence=True)


def read_settings(cfg: DictConfig) -> tuple[chunked.Settings, ScoreFilter]:
    """Check the settings that need no model, so that a mistake stops the run before anything loads."""
    settings = chunked.read_settings(
        cfg, model="teacher", ensembles=True, text="the source text to distill (the training sources)",
    )  # fmt: skip
    chunked.check_suffixes(cfg)
    rule = read_filter(OmegaConf.to_container(cfg.filter) if cfg.get("filter") is not None else None)
    return settings, rule


def load_teacher(cfg: DictConfig, settings: chunked.Settings) -> Translator:
    """The teacher, with the search of the `decode` group (one output per line)."""
    paths = settings.checkpoints
    translator = translator_from_config(cfg, checkpoint=paths[0] if len(paths) == 1 else list(paths))
    if translator.options.nbest != 1:
        raise UserError(f"decode.nbest={translator.options.nbest}: distillation writes one translation "
                        "per line; use decode.nbest=1")  # fmt: skip
    return translator


def languages(cfg: DictConfig, translator: Translator, checkpoint: Path) -> tuple[str, str]:
    """(src, tgt) suffixes of the corpus: the teacher's languages unless src_lang= / tgt_lang= name them."""
    model = chunked.model_languages(translator, checkpoint)
    src = str(cfg.src_lang) if cfg.src_lang is not None else (model[0] if model else None)
    tgt = str(cfg.tgt_lang) if cfg.tgt_lang is not None else (model[1] if model else None)
    if src is None or tgt is None:
        raise UserError(f"{checkpoint} names no languages; pass src_lang= (the language of the input) and "
                        "tgt_lang= (the language the teacher translates into)")  # fmt: skip
    if len({src, tgt, SCORE_SUFFIX}) != 3:
        raise UserError(f"src_lang={src} and tgt_lang={tgt} must differ from each other and from "
                        f"{SCORE_SUFFIX!r} (the scores file's suffix)")  # fmt: skip
    return src, tgt


def chunk_lines(out: store.OutputDir, index: int, suffix: str) -> list[str]:
    return out.chunk_file(index, suffix).read_text(encoding="utf-8").split("\n")[:-1]


def write_corpus(out: store.OutputDir, chunks: int, rule: ScoreFilter) -> dict[str, Any]:
    """distill.<src>, distill.<tgt>, distill.scores: the pairs the filter keeps, in input order (all of
    them without a filter), and dropped.tsv (score, source, translation) the others; the counts."""
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
                streams = (src, tgt, kept_scores) if not drop[row] else None
                if streams is None:
                    dropped.write(f"{score}\t{source}\t{target}\n")
                    continue
                for stream, text in zip(streams, (source, target, score)):
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


@exit_on_user_error
def distill(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING if cfg.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    began = time.perf_counter()
    settings, rule = read_settings(cfg)
    total = chunked.count_lines(settings.input)  # reads the whole input before a model loads
    teacher = load_teacher(cfg, settings)
    langs = languages(cfg, teacher, settings.checkpoints[0])
    teacher = chunked.with_corpus_languages(teacher, reads=langs[0], writes=langs[1])
    out = store.OutputDir(settings.output_dir, *langs, SCORE_SUFFIX, layout=LAYOUT)
    with store.holding(settings.output_dir, LAYOUT):
        claim = chunked.fingerprint(teacher, settings, cfg, langs)
        stats, resumed = chunked.translate_file(JOB, teacher, settings, out, total, claim)
        kept = write_corpus(out, len(stats), rule)
        outputs = {"src": out.corpus_file(langs[0]), "tgt": out.corpus_file(langs[1]),
                   "scores": out.corpus_file(SCORE_SUFFIX), "dropped": out.root / DROPPED_FILE}  # fmt: skip
        report = chunked.summary(teacher, cfg, settings, stats, resumed, outputs, time.perf_counter() - began)
        report["filter"] = kept
        path = chunked.write_report(report, settings.output_dir)
    log_summary(report, path)
    return report


def log_summary(report: dict[str, Any], path: Path) -> None:
    chunked.log_skipped(JOB, report)
    kept, outputs = report["filter"], report["outputs"]
    if kept["dropped"]:
        log.info("the filter dropped %d of %d pairs (lowest score kept %.3f); they are in %s",
                 kept["dropped"], kept["dropped"] + kept["kept"], kept["lowest_kept_score"],
                 outputs["dropped"])  # fmt: skip
    log.info("distilled %d sentences in %.1f s (%.1f sentences/s, engine %s): %d pairs in %s and %s; "
             "report %s", report["sentences"], report["seconds"], report["sentences_per_second"],
             report["engine"], kept["kept"], outputs["src"], outputs["tgt"], path)  # fmt: skip


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="distill")
def main(cfg: DictConfig) -> None:
    distill(cfg)


if __name__ == "__main__":
    main()

"""seq2seq-backtranslate: monolingual target-language text and a reverse model in, synthetic parallel data.

seq2seq-backtranslate checkpoint=runs/bible.es-en/best.pt input=mono.es output_dir=bt/mono
seq2seq-backtranslate checkpoint=exported/es-en input=mono.es output_dir=bt/mono quantization=int8 \
    decode=sample decode.top_k=10

The reverse model (target -> source) translates each monolingual line: its translation is the synthetic
source, the line itself the target. The file is translated chunk by chunk as seq2seq.cli.corpus_translation
does it for every such command: memory flat in the file size, a run stopped even by kill -9 resumes to
the bytes an uninterrupted run writes, a rerun with other settings is refused.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig

from seq2seq.cli import corpus_translation as chunked
from seq2seq.cli import translated_corpus_dir as store
from seq2seq.cli.corpus_translation import check_suffixes, count_lines, model_languages
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.backtranslate")


def pairs(lines: list[str], translations: list[Translation]) -> list[tuple[str, ...]]:
    """(synthetic source, monolingual line) of every line whose translation is not empty."""
    return [(t.text, line) for line, t in zip(lines, translations) if t.text]


JOB = chunked.Job(layout=store.BACKTRANSLATION, label="back-translate", log=log, rows=pairs)


def read_settings(cfg: DictConfig) -> chunked.Settings:
    """Check the settings that need no model, so that a mistake stops the run before anything loads."""
    settings = chunked.read_settings(
        cfg, model="reverse model (target -> source)", ensembles=False,
        text="a monolingual text file in the target language",
    )  # fmt: skip
    check_suffixes(cfg)
    return settings


def load_translator(cfg: DictConfig, settings: chunked.Settings) -> Translator:
    """The reverse model, with the search of the `decode` group (one output per line)."""
    translator = translator_from_config(cfg, checkpoint=settings.checkpoints[0])
    if translator.options.nbest != 1:
        raise UserError(f"decode.nbest={translator.options.nbest}: back-translation writes one source "
                        "per line; use decode.nbest=1 (for more, rerun with other decode.seed)")  # fmt: skip
    return translator


def languages(cfg: DictConfig, translator: Translator, checkpoint: Path) -> tuple[str, str]:
    """(src, tgt) suffixes of the synthetic corpus. By default the reverse model's languages swapped:
    its target is our source, its source (the monolingual text's language) our target."""
    model = model_languages(translator, checkpoint)
    src = str(cfg.src_lang) if cfg.src_lang is not None else (model[1] if model else None)
    tgt = str(cfg.tgt_lang) if cfg.tgt_lang is not None else (model[0] if model else None)
    if src is None or tgt is None:
        raise UserError(f"{checkpoint} names no languages; pass src_lang= (the language the model translates "
                        "into) and tgt_lang= (the language of the input)")  # fmt: skip
    if src == tgt:
        raise UserError(f"src_lang and tgt_lang are both {src!r}; the corpus's two sides need two "
                        "suffixes")  # fmt: skip
    if model and (src, tgt) != (model[1], model[0]):
        log.warning("the checkpoint translates %s->%s, but src_lang=%s tgt_lang=%s; back-translation of %s "
                    "text needs a %s->%s model", model[0], model[1], src, tgt, tgt, tgt, src)  # fmt: skip
    return src, tgt


@exit_on_user_error
def backtranslate(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING if cfg.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    began = time.perf_counter()
    settings = read_settings(cfg)
    total = count_lines(settings.input)  # reads the whole input before a model loads or a file is written
    translator = load_translator(cfg, settings)
    langs = languages(cfg, translator, settings.checkpoints[0])
    translator = chunked.with_corpus_languages(translator, reads=langs[1], writes=langs[0])  # tgt -> src
    out = store.OutputDir(settings.output_dir, *langs)
    with store.holding(settings.output_dir):
        claim = chunked.fingerprint(translator, settings, cfg, langs)
        stats, resumed = chunked.translate_file(JOB, translator, settings, out, total, claim)
        corpus = out.concatenate(len(stats))
        outputs = {"src": corpus[0], "tgt": corpus[1]}
        wall = time.perf_counter() - began
        report = chunked.summary(translator, cfg, settings, stats, resumed, outputs, wall)
        path = chunked.write_report(report, settings.output_dir)
    log_summary(report, path)
    return report


def log_summary(report: dict[str, Any], path: Path) -> None:
    chunked.log_skipped(JOB, report)
    log.info("back-translated %d sentences in %.1f s (%.1f sentences/s, engine %s): %d pairs in %s and "
             "%s; report %s", report["sentences"], report["seconds"], report["sentences_per_second"],
             report["engine"], report["pairs"], *report["outputs"].values(), path)  # fmt: skip


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="backtranslate")
def main(cfg: DictConfig) -> None:
    backtranslate(cfg)


if __name__ == "__main__":
    main()

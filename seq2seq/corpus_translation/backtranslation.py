"""Back-translation: monolingual text and a reverse model in, synthetic parallel data out.

    from seq2seq import Translator
    from seq2seq.corpus_translation import BacktranslateSettings, backtranslate

    model = Translator.from_checkpoint("runs/bible.es-en/best.pt")  # es -> en: reads Spanish
    report = backtranslate(model, BacktranslateSettings(
        checkpoint="runs/bible.es-en/best.pt", input="mono.es", output_dir="bt/mono"))
    report["outputs"]  # {"src": "bt/mono/bt.en" (synthetic), "tgt": "bt/mono/bt.es" (the lines)}

The reverse model translates each monolingual line: its translation is the corpus's synthetic source,
the line itself its target. `src_lang` / `tgt_lang` are the model's direction (it reads src_lang, the
input's language, and writes tgt_lang), as everywhere; the corpus files are named by their languages:
bt.<tgt_lang> (synthetic sources) and bt.<src_lang> (the lines). Until this release the two keys named
the corpus's sides, the other way round; a run that names a one-direction model's languages backwards
is refused, so that an old command line cannot run silently reversed.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from seq2seq.corpus_translation import output_dir as store
from seq2seq.corpus_translation.chunks import Job, translate_file
from seq2seq.corpus_translation.languages import is_multilingual, model_languages, with_corpus_languages
from seq2seq.corpus_translation.run_record import fingerprint, log_skipped, summary, write_report
from seq2seq.corpus_translation.settings import BacktranslateSettings, CheckedInput, check_input
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.backtranslate")


def pairs(lines: list[str], translations: list[Translation]) -> list[tuple[str, ...]]:
    """(synthetic source, monolingual line) of every line whose translation is not empty."""
    return [(t.text, line) for line, t in zip(lines, translations) if t.text]


JOB = Job(layout=store.BACKTRANSLATION, label="back-translate", log=log, rows=pairs)


def backtranslate(
    translator: Translator, settings: BacktranslateSettings, *, checked: CheckedInput | None = None
) -> dict[str, Any]:
    """Back-translate `settings.input` with the reverse model `translator` into settings.output_dir
    (resuming a run with the same settings there); report.json's contents. `checked`: what
    `check_input(settings)` found, when the caller called it before loading the model (else it is called
    here)."""
    checked = checked or check_input(settings)
    check_one_output(translator)
    src, tgt = languages(settings, translator)
    translator = with_corpus_languages(translator, reads=src, writes=tgt)
    out = store.OutputDir(settings.output_dir, tgt, src)  # the corpus's sides: synthetic, then the lines
    with store.holding(settings.output_dir):
        claim = fingerprint(translator, settings, (tgt, src))
        stats, resumed = translate_file(JOB, translator, settings, out, checked.lines, claim)
        corpus = out.concatenate(len(stats))
        outputs = {"src": corpus[0], "tgt": corpus[1]}
        wall = time.perf_counter() - checked.started
        report = summary(translator, settings, stats, resumed, outputs, wall)
        path = write_report(report, settings.output_dir)
    log_summary(report, path)
    return report


def check_one_output(translator: Translator) -> None:
    if translator.options.nbest != 1:
        raise UserError(f"decode.nbest={translator.options.nbest}: back-translation writes one source "
                        "per line; use decode.nbest=1 (for more, rerun with other decode.seed)")  # fmt: skip


def languages(settings: BacktranslateSettings, translator: Translator) -> tuple[str, str]:
    """(src_lang, tgt_lang): the language the reverse model reads (the input's) and the one it writes
    (the synthetic sources'); by default the model's own. A model with language codes may translate in
    other directions than its training config records, so only a one-direction model's are checked."""
    checkpoint = settings.checkpoints[0]
    model = model_languages(translator, checkpoint)
    one_way = None if model is None or is_multilingual(translator) else model
    if one_way is not None and swapped(settings.src_lang, settings.tgt_lang, one_way):
        refuse_swapped(settings, one_way)
    src = settings.src_lang if settings.src_lang is not None else (model[0] if model else None)
    tgt = settings.tgt_lang if settings.tgt_lang is not None else (model[1] if model else None)
    if src is None or tgt is None:
        raise UserError(f"{checkpoint} names no languages; pass src_lang= (the language of the input, which "
                        "the model reads) and tgt_lang= (the language it translates into)")  # fmt: skip
    if src == tgt:
        raise UserError(f"src_lang and tgt_lang are both {src!r}; the corpus's two sides need two "
                        "suffixes")  # fmt: skip
    if one_way is not None and (src, tgt) != one_way:
        log.warning("the checkpoint translates %s->%s, but src_lang=%s tgt_lang=%s; back-translation of %s "
                    "text needs a %s->%s model", *one_way, src, tgt, src, src, tgt)  # fmt: skip
    return src, tgt


def swapped(src_lang: str | None, tgt_lang: str | None, model: tuple[str, str]) -> bool:
    """Whether the languages given name the model's direction backwards, as the keys' old meaning (the
    corpus's sides) would: the model's target as the language read, or its source as the one written,
    and nothing else."""
    given = (src_lang, tgt_lang) != (None, None)
    return given and src_lang in (None, model[1]) and tgt_lang in (None, model[0])


def refuse_swapped(settings: BacktranslateSettings, model: tuple[str, str]) -> None:
    named = " ".join(f"{key}={value}" for key, value in (("src_lang", settings.src_lang),
                     ("tgt_lang", settings.tgt_lang)) if value is not None)  # fmt: skip
    raise UserError(f"{named} names the reverse model's languages backwards (it translates {model[0]}->"
                    f"{model[1]}): src_lang/tgt_lang of back-translation now mean the languages the model "
                    f"reads and writes, no longer the corpus's sides; pass src_lang={model[0]} "
                    f"tgt_lang={model[1]}, or neither")  # fmt: skip


def log_summary(report: dict[str, Any], path: Path) -> None:
    log_skipped(log, report)
    log.info("back-translated %d sentences in %.1f s (%.1f sentences/s, engine %s): %d pairs in %s and "
             "%s; report %s", report["sentences"], report["seconds"], report["sentences_per_second"],
             report["engine"], report["pairs"], *report["outputs"].values(), path)  # fmt: skip


__all__ = ["backtranslate", "languages", "swapped"]

"""seq2seq-translate: a checkpoint plus text in, translations out, one output line per input line.

seq2seq-translate checkpoint=runs/bible.en-es/best.pt input=test.en output=test.hyp
echo "In the beginning God created the heavens." | seq2seq-translate checkpoint=... decode=greedy

Output line, tab-separated: the translation, then the score (scores=true), the confidence
(confidence=true, confidence_format=tsv) and the alignment (alignment=true), in that order; an empty
input line gives an empty line. With confidence_format=jsonl, one JSON value per input line instead
(seq2seq.inference.output_writers). With decode.nbest > 1, Moses n-best lines "index ||| text ||| score",
plus " ||| confidence" with confidence=true (tsv).

A multilingual model (M2M100, NLLB) translates from src_lang into tgt_lang (language codes such as
eng_Latn and spa_Latn; default: those recorded when it was imported):
seq2seq-translate checkpoint=nllb.pt tgt_lang=spa_Latn input=test.en
With language_columns=[tgt_lang] (or [src_lang,tgt_lang]) each input line names its own languages in
leading tab-separated columns ("es<TAB>God is love."; seq2seq.inference.language_columns).

The lines run the one translation path (seq2seq.inference.pipeline), as Translator.translate and the
server do; this module reads the files and writes the lines.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from tqdm import tqdm

from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.cli.config.paths import absolute
from seq2seq.cli.config.setting_checks import log_level_setting, progress_bar_setting
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError
from seq2seq.inference import pipeline
from seq2seq.inference.attention_output import AttentionOutput, check_attention_settings, text_alignments
from seq2seq.inference.document_formats import check_format, translate_document
from seq2seq.inference.language_columns import checked_columns, split_language_columns
from seq2seq.inference.language_detection import AUTO
from seq2seq.inference.output_writers import LineFormat, TextResults, translation_lines, write_report
from seq2seq.inference.prepared import Prepared, prepare
from seq2seq.inference.request import TranslationRequest
from seq2seq.inference.sentences import segment_setting
from seq2seq.inference.text_files import read_bytes, read_lines, write_bytes, write_lines
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.translate")


@exit_on_user_error
def translate(cfg: DictConfig) -> None:
    logging.basicConfig(stream=sys.stderr, level=log_level_setting(cfg.log_level),
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    line = line_format(cfg)
    # decode keys left null: the model's own tuned values; language codes null: the model's own
    detect = str(cfg.src_lang) == AUTO  # src_lang=auto: each line's language is detected (per text)
    translator = translator_from_config(cfg, src_lang=None if detect else cfg.src_lang, tgt_lang=cfg.tgt_lang)
    decode = dataclasses.asdict(translator.options)  # what the search uses, for the report
    attention = attention_output(cfg)
    if attention.asked:
        check_attention_settings(attention, translator)
    if check_format(cfg.format) != "text":
        translate_file(cfg, translator)
        return
    lines = read_lines(absolute(cfg.input), cfg.encoding_errors)
    prepared = prepare(translator, line_request(cfg, lines, confidence=line.confidence is not None))
    log.info("translating %d lines (%d pieces) with %s on %s", len(lines), len(prepared.sources),
             translator.options.describe(), translator.device)  # fmt: skip
    start = time.perf_counter()
    results = _search_with_progress(cfg, translator, prepared)
    seconds = time.perf_counter() - start
    ranked = pipeline.finish(translator, prepared, results)
    texts = TextResults(ranked, prepared.given(), text_alignments(attention, translator, prepared, results))
    tokenizers = (translator.src_tokenizer, translator.tgt_tokenizer)
    output = translation_lines(line, prepared, results, texts, tokenizers, qe=translator.quality is not None)
    write_lines(absolute(cfg.output), output)
    if cfg.report:
        settings = report_settings(cfg, decode, compiled=translator.engine.compiled)
        write_report(Path(absolute(cfg.report)), settings, results, len(lines), seconds)


def line_format(cfg: DictConfig) -> LineFormat:
    """What each output line holds: scores=, confidence= with confidence_format=, alignment=."""
    if not isinstance(cfg.confidence, bool):
        raise UserError(f"confidence={cfg.confidence!r} must be true or false")
    fmt = LineFormat(
        scores=bool(cfg.scores), confidence=str(cfg.confidence_format), alignment=bool(cfg.alignment)
    )
    return dataclasses.replace(fmt, confidence=fmt.confidence if cfg.confidence else None)


def attention_output(cfg: DictConfig) -> AttentionOutput:
    """alignment=, attention_dir=, attention_layer=, attention_head=."""
    layer, head = cfg.attention_layer, cfg.attention_head
    pictures = Path(absolute(cfg.attention_dir)) if cfg.attention_dir else None
    return AttentionOutput(
        alignment=bool(cfg.alignment), pictures=pictures, layer=None if layer is None else int(layer),
        head=None if head is None else int(head),
    )  # fmt: skip


def line_request(cfg: DictConfig, lines: list[str], *, confidence: bool) -> TranslationRequest:
    """The input lines as one request: per line its languages (language_columns), its prefix (prefixes=
    FILE) and its phrases (constraints= FILE); the avoided phrases (avoid= FILE)."""
    columns = checked_columns(cfg.get("language_columns") or [], src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang,
                              glossary=bool(cfg.get("glossary")))  # fmt: skip
    texts: Sequence[str] = lines
    keywords: dict[str, Any] = {"src_lang": AUTO} if str(cfg.src_lang) == AUTO else {}
    if columns:
        texts, pairs = split_language_columns(lines, columns)
        keywords = {"src_lang": [src for src, _ in pairs], "tgt_lang": [tgt for _, tgt in pairs]}
    return TranslationRequest.of(
        texts,
        prefixes=_prefixes(cfg, len(lines)),
        constraints=_constraint_lines(cfg),
        avoid=_avoided(cfg),
        confidence=confidence,
        segment=segment_setting(cfg.segment),
        **keywords,
    )


# Settings that shape the text format's lines, and so have no meaning for a whole document.
LINE_SETTINGS = (
    "scores",
    "confidence",
    "alignment",
    "attention_dir",
    "constraints",
    "prefixes",
    "qe_checkpoint",
)


def translate_file(cfg: DictConfig, translator: Translator) -> None:
    """format=html|xliff|po: the input file translated segment by segment into the same format
    (seq2seq.inference.document_formats)."""
    given = [name for name in LINE_SETTINGS if cfg.get(name)] + (
        ["decode.nbest"] if translator.options.nbest > 1 else []
    )
    if given:
        raise UserError(
            f"format={cfg.format} writes the translated file; {', '.join(given)} need format=text"
        )
    data = read_bytes(absolute(cfg.input))

    def segments(texts: Sequence[str], markup: str) -> list[str]:
        log.info("format=%s: translating %d segments", cfg.format, len(texts))
        return [t.text for t in translator.translate(texts, markup=markup, max_tokens=int(cfg.max_tokens))]

    write_bytes(absolute(cfg.output), translate_document(data, str(cfg.format), segments))


def report_settings(cfg: DictConfig, decode: dict[str, Any], *, compiled: bool) -> dict[str, Any]:
    """The settings report= records beside the speed."""
    return {"checkpoint": str(cfg.checkpoint), "input": str(cfg.input), "decode": decode,
            "precision": str(cfg.precision), "quantization": str(cfg.quantization),
            "compile": str(cfg.compile).lower(), "compiled": compiled, "device": str(cfg.device)}  # fmt: skip


def _prefixes(cfg: DictConfig, count: int) -> list[str] | None:
    """prefixes=FILE: one target prefix per input line (an empty line: none)."""
    if not cfg.prefixes:
        return None
    prefixes = read_lines(absolute(cfg.prefixes), cfg.encoding_errors)
    if len(prefixes) != count:
        raise UserError(f"prefixes={cfg.prefixes} has {len(prefixes)} lines but the input has {count}; "
                        "give one target prefix (or an empty line) per input line")  # fmt: skip
    return prefixes


def _constraint_lines(cfg: DictConfig) -> list[list[str]] | None:
    """constraints=FILE: per line, its tab-separated phrases (a blank line: none)."""
    if not cfg.constraints:
        return None
    lines = read_lines(absolute(cfg.constraints), cfg.encoding_errors)
    return [line.split("\t") if line.strip() else [] for line in lines]


def _avoided(cfg: DictConfig) -> list[str] | None:
    """avoid=FILE: one phrase per line (blank lines skipped)."""
    if not cfg.avoid:
        return None
    return [line for line in read_lines(absolute(cfg.avoid), cfg.encoding_errors) if line.strip()]


def _search_with_progress(
    cfg: DictConfig, translator: Translator, prepared: Prepared
) -> list[list[Hypothesis]]:
    show = progress_bar_setting(cfg.progress_bar)
    use_bar = (sys.stderr.isatty() and cfg.input != "-") if show is None else show
    bar = (
        tqdm(total=len(prepared.sources), unit="sent", desc="translate", file=sys.stderr) if use_bar else None
    )
    try:
        return pipeline.search(translator, prepared, max_tokens=int(cfg.max_tokens),
                               on_batch=bar.update if bar else None)  # fmt: skip
    finally:
        if bar is not None:
            bar.close()


main = command_main(translate, command="seq2seq-translate", config_name="translate")


if __name__ == "__main__":
    main()

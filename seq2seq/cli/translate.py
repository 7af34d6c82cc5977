"""seq2seq-translate: a checkpoint plus text in, translations out, one output line per input line.

seq2seq-translate checkpoint=runs/bible.en-es/best.pt input=test.en output=test.hyp
echo "In the beginning God created the heavens." | seq2seq-translate checkpoint=... decode=greedy

Output line, tab-separated: the translation, then the score (scores=true), the confidence
(confidence=true, confidence_format=tsv) and the alignment (alignment=true), in that order; an empty
input line gives an empty line. With confidence_format=jsonl, one JSON value per input line instead
(seq2seq.cli.translation_output). With decode.nbest > 1, Moses n-best lines "index ||| text ||| score",
plus " ||| confidence" with confidence=true (tsv).

A multilingual model (M2M100, NLLB) translates from src_lang into tgt_lang (language codes such as
eng_Latn and spa_Latn; default: those recorded when it was imported):
seq2seq-translate checkpoint=nllb.pt tgt_lang=spa_Latn input=test.en
With language_columns=[tgt_lang] (or [src_lang,tgt_lang]) each input line names its own languages in
leading tab-separated columns ("es<TAB>God is love."; seq2seq.cli.language_columns).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import hydra
from omegaconf import DictConfig
from tqdm import tqdm

from seq2seq.cli.attention_output import check_attention_settings
from seq2seq.cli.language_columns import encode_per_language, language_columns_setting, split_language_columns
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.renamed_keys import accept_deprecated_keys
from seq2seq.cli.config.setting_checks import progress_bar_setting
from seq2seq.cli.text_files import output_path, read_bytes, read_lines, write_bytes, write_lines
from seq2seq.cli.translation_output import translation_lines, write_report
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError
from seq2seq.inference.document_formats import check_format, translate_document
from seq2seq.inference.translator import EncodedInput, Translator

log = logging.getLogger("seq2seq.translate")
CONFIDENCE_FORMATS = ("tsv", "jsonl")
RENAMED = {"prefix": "prefixes"}  # old key -> new, accepted (with a warning) for one release


@dataclass(frozen=True)
class SearchInput:
    """The input lines, encoded for the search: the sources (a long line may be split into pieces), and per
    piece its forced target prefix, the phrases it must contain and the phrases none may contain."""

    encoded: EncodedInput
    prefixes: list[list[int]] | None
    constraints: list[list[list[int]]] | None
    avoid: list[list[int]] | None


@exit_on_user_error
def translate(cfg: DictConfig) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING if cfg.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    confidence = confidence_setting(cfg)
    # decode keys left null: the model's own tuned values; language codes null: the model's own
    translator = translator_from_config(cfg, src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang)
    decode = dataclasses.asdict(translator.options)  # what the search uses, for the report
    if cfg.alignment or cfg.attention_dir:
        check_attention_settings(cfg, translator)
    if check_format(cfg.format) != "text":
        translate_file(cfg, translator)
        return
    lines = read_lines(str(cfg.input), cfg.encoding_errors)
    columns = language_columns_setting(cfg)
    if columns:
        lines, languages = split_language_columns(lines, columns, cfg)
        given = SearchInput(*encode_per_language(translator, lines, languages), constraints=None, avoid=None)
    else:
        given = encode_input(cfg, translator, lines)
    log.info("translating %d lines (%d pieces) with %s on %s", len(lines), len(given.encoded.sources),
             translator.options.describe(), translator.device)  # fmt: skip
    start = time.perf_counter()
    results = _search_with_progress(
        cfg, translator, given, confidence=confidence is not None or translator.quality is not None
    )
    seconds = time.perf_counter() - start
    output = translation_lines(cfg, translator, given.encoded, results, confidence=confidence)
    write_lines(output_path(str(cfg.output)), output)
    if cfg.report:
        write_report(
            Path(hydra.utils.to_absolute_path(cfg.report)), cfg, decode, results, len(lines), seconds,
            compiled=translator.engine.compiled,
        )  # fmt: skip


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
    data = read_bytes(str(cfg.input))

    def segments(texts: Sequence[str], markup: str) -> list[str]:
        log.info("format=%s: translating %d segments", cfg.format, len(texts))
        return [t.text for t in translator.translate(texts, markup=markup, max_tokens=int(cfg.max_tokens))]

    write_bytes(output_path(str(cfg.output)), translate_document(data, str(cfg.format), segments))


def encode_input(cfg: DictConfig, translator: Translator, lines: list[str]) -> SearchInput:
    """`lines` encoded, with the prefixes (prefixes=FILE) and phrases (constraints=, glossary=,
    avoid=) of each; a prefix file must have a line per input line."""
    encoded = translator.encode(lines)
    forced = None
    if cfg.prefixes:
        prefixes = read_lines(str(cfg.prefixes), cfg.encoding_errors)
        if len(prefixes) != len(lines):
            raise UserError(
                f"prefixes={cfg.prefixes} has {len(prefixes)} lines but the input has {len(lines)}; "
                "give one target prefix (or an empty line) per input line"
            )
        forced = translator.encode_prefixes(prefixes, encoded)
    wanted, banned = translator.encode_constraints(
        lines, encoded, constraints=_constraint_lines(cfg), avoid=_avoided(cfg)
    )
    return SearchInput(encoded, forced, wanted, banned)


def confidence_setting(cfg: DictConfig) -> str | None:
    """How to write each translation's confidence: "tsv" or "jsonl" (confidence_format), or None."""
    if not isinstance(cfg.confidence, bool):
        raise UserError(f"confidence={cfg.confidence!r} must be true or false")
    if cfg.confidence_format not in CONFIDENCE_FORMATS:
        raise UserError(f"confidence_format={cfg.confidence_format!r} is not supported; choose "
                        f"{' or '.join(CONFIDENCE_FORMATS)}")  # fmt: skip
    return str(cfg.confidence_format) if cfg.confidence else None


def _constraint_lines(cfg: DictConfig) -> list[list[str]] | None:
    """constraints=FILE: per line, its tab-separated phrases (a blank line: none)."""
    if not cfg.constraints:
        return None
    lines = read_lines(str(cfg.constraints), cfg.encoding_errors)
    return [line.split("\t") if line.strip() else [] for line in lines]


def _avoided(cfg: DictConfig) -> list[str] | None:
    """avoid=FILE: one phrase per line (blank lines skipped)."""
    if not cfg.avoid:
        return None
    return [line for line in read_lines(str(cfg.avoid), cfg.encoding_errors) if line.strip()]


def _search_with_progress(
    cfg: DictConfig, translator: Translator, given: SearchInput, *, confidence: bool
) -> list[list[Hypothesis]]:
    show = progress_bar_setting(cfg.progress_bar)
    use_bar = (sys.stderr.isatty() and cfg.input != "-") if show is None else show
    sources = given.encoded.sources
    bar = tqdm(total=len(sources), unit="sent", desc="translate", file=sys.stderr) if use_bar else None
    try:
        return translator.search(
            sources, max_tokens=int(cfg.max_tokens), prefixes=given.prefixes,
            on_batch=bar.update if bar else None, confidence=confidence, constraints=given.constraints,
            avoid=given.avoid,
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()


@accept_deprecated_keys(RENAMED)
@hydra.main(version_base="1.3", config_path=config_dir(), config_name="translate")
def main(cfg: DictConfig) -> None:
    translate(cfg)


if __name__ == "__main__":
    main()

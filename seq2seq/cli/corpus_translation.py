"""Translating a whole file into a corpus, chunk by chunk, resumable: what seq2seq-backtranslate and
seq2seq-distill share.

The input is streamed in chunks of `chunk_lines` lines, each saved whole as it is done
(seq2seq.cli.translated_corpus_dir), so memory stays flat in the file size, and a run that is stopped,
even by kill -9, continues where it stopped when started again with the same settings. Each chunk
samples from its own seed, derived from decode.seed and its index, so a resumed run writes the same
bytes as an uninterrupted one. A command says, as a `Job`, what its files are called and which
columns a chunk's translations become (back-translation: translation then line; distillation: line,
translation, the teacher's score).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli import translated_corpus_dir as store
from seq2seq.cli.config.setting_checks import number_setting, progress_bar_setting
from seq2seq.data.binarize import file_digest
from seq2seq.data.corpus import check_policy, decode_line, iter_raw_lines, normalize
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.confidence import Translation
from seq2seq.inference.exported import read_metadata
from seq2seq.inference.languages import codes_listed, names_target_on_source
from seq2seq.inference.translator import Translator

LANGUAGE = re.compile(r"[A-Za-z0-9_-]+")  # a file-name suffix
Rows = Callable[[list[str], list[Translation]], list[tuple[str, ...]]]


@dataclass(frozen=True)
class Job:
    """One command's way of turning a file into a corpus."""

    layout: store.Layout  # its files' names
    label: str  # the progress bar's label ("back-translate")
    log: logging.Logger
    rows: Rows  # (non-blank input lines, their translations) -> a chunk's rows, one string per file
    confidence: bool = False  # search with per-token log-probabilities (Translation.mean_log_prob)


@dataclass(frozen=True)
class Settings:
    """The command's settings that are not the Translator's, checked."""

    checkpoints: tuple[Path, ...]  # one model, or an ensemble's members
    input: Path
    output_dir: Path
    chunk_lines: int
    max_tokens: int
    encoding_errors: str
    force: bool
    progress_bar: bool | None  # None: on a terminal


def read_settings(cfg: DictConfig, *, model: str, text: str, ensembles: bool) -> Settings:
    """Check the settings that need no model, so that a mistake stops the run before anything loads.
    `model` and `text` say what checkpoint= and input= must be, for the errors; `ensembles`: whether
    checkpoint= may be a list."""
    listed = OmegaConf.is_list(cfg.checkpoint)
    if listed and not ensembles:
        raise UserError(f"checkpoint= takes one {model} (a .pt file or an exported directory), not a list")
    if listed and not cfg.checkpoint:
        raise UserError("checkpoint=[] names no model; pass a .pt file, an exported directory or a list "
                        "of .pt files")  # fmt: skip
    if str(cfg.input) == "-":
        raise UserError("input=- (stdin) cannot be resumed or counted; pass a file (plain or .gz)")
    checkpoints = tuple(absolute(value) for value in (cfg.checkpoint if listed else [cfg.checkpoint]))
    for checkpoint in checkpoints:
        if not checkpoint.exists():
            raise UserError(f"checkpoint={checkpoint} does not exist; pass the {model}: a .pt file of "
                            "seq2seq-train or a directory of seq2seq-export")  # fmt: skip
    source = absolute(cfg.input)
    if not source.is_file():
        what = "is not a file" if source.exists() else "does not exist"
        raise UserError(f"input={source} {what}; pass {text}, one sentence per line (plain or .gz)")
    output_dir = absolute(cfg.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise UserError(f"output_dir={output_dir} is a file; pass a directory (new, or an earlier run's)")
    check_policy(str(cfg.encoding_errors))
    if not isinstance(cfg.force, bool):
        raise UserError(f"force={cfg.force!r} must be true or false")
    return Settings(
        checkpoints=checkpoints, input=source, output_dir=output_dir,
        chunk_lines=number_setting(cfg.chunk_lines, setting="chunk_lines", minimum=1),
        max_tokens=number_setting(cfg.max_tokens, setting="max_tokens", minimum=1),
        encoding_errors=str(cfg.encoding_errors), force=cfg.force,
        progress_bar=progress_bar_setting(cfg.progress_bar),
    )  # fmt: skip


def absolute(path: Any) -> Path:
    return Path(hydra.utils.to_absolute_path(str(path)))


def check_suffixes(cfg: DictConfig) -> None:
    for key in ("src_lang", "tgt_lang"):
        if cfg[key] is not None and not LANGUAGE.fullmatch(str(cfg[key])):
            raise UserError(f"{key}={cfg[key]!r} is not a file suffix; use letters, digits, - or _ (e.g. en)")


def with_corpus_languages(translator: Translator, *, reads: str, writes: str) -> Translator:
    """A multilingual model told to read `reads` and write `writes`, the corpus's file suffixes, where they
    are codes of its own (our models' en, es; NLLB's eng_Latn when the files are named so); a side whose
    suffix is not one of its codes keeps the language recorded at import. A model without language codes
    is returned as it is. A side left with no language at all is a one-line error."""
    src_codes, tgt_codes = translator.src_tokenizer.languages, translator.tgt_tokenizer.languages
    if not (src_codes or tgt_codes):
        return translator
    if names_target_on_source(translator.src_tokenizer):  # OPUS-MT: only the target is named
        chosen = translator.for_languages(tgt_lang=writes if writes in src_codes else None)
    else:
        chosen = translator.for_languages(src_lang=reads if reads in src_codes else None,
                                          tgt_lang=writes if writes in tgt_codes else None)  # fmt: skip
    try:
        chosen.check_languages()
    except UserError:
        raise UserError(f"this multilingual model needs the languages it reads and writes, and the corpus "
                        f"suffixes {reads} -> {writes} are not its codes ({codes_listed(tgt_codes or src_codes)}); "
                        "name the files by its codes (src_lang=, tgt_lang=)") from None  # fmt: skip
    return chosen


def model_languages(translator: Translator, checkpoint: Path) -> tuple[str, str] | None:
    """(source, target) the model was trained for: a checkpoint's, or an exported directory's."""
    return translator.languages or exported_languages(checkpoint)


def exported_languages(directory: Path) -> tuple[str, str] | None:
    """(source, target) of an exported model's training config, from the PyTorch weights it keeps."""
    if not directory.is_dir():
        return None
    weights = read_metadata(directory).get("torch_weights")
    if not weights or not (directory / weights).is_file():
        return None
    data = (load_checkpoint(directory / weights, mmap=True).get("config") or {}).get("data") or {}
    if not (data.get("src_lang") and data.get("tgt_lang")):
        return None
    return str(data["src_lang"]), str(data["tgt_lang"])


def checkpoint_digest(path: Path) -> str:
    """sha256 of a checkpoint file; of an exported directory, over its files' names and sha256s."""
    if path.is_file():
        return file_digest(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(f"{file.name}\t{file_digest(file)}\n".encode())
    return digest.hexdigest()


def fingerprint(translator: Translator, settings: Settings, cfg: DictConfig, langs: tuple[str, str]) -> dict:
    """What decides the corpus's bytes (compared on a rerun), and where the files were (not compared:
    a moved file with the same bytes still resumes). Left out: max_tokens and device, which change the
    speed (and the draws of a sampled chunk, which stays a valid sample), and encoding_errors: a chunk
    done with strict holds no invalid bytes, so replace gives the same bytes and may finish the run.
    One model is recorded as a string, an ensemble as a list (in its order, which the search keeps)."""
    digests = [checkpoint_digest(path) for path in settings.checkpoints]
    paths = [str(path) for path in settings.checkpoints]
    one = len(settings.checkpoints) == 1
    return {
        "settings": {
            "input_sha256": file_digest(settings.input),
            "checkpoint_sha256": digests[0] if one else digests,
            "engine": translator.engine.name,
            "precision": str(cfg.precision),
            "quantization": str(cfg.quantization),
            "decode": dataclasses.asdict(translator.options),
            "chunk_lines": settings.chunk_lines,
            "max_input_tokens": translator.max_input_tokens,
            "long_lines": translator.long_lines,
            "langs": {"src": langs[0], "tgt": langs[1]},
            # lines with tags or placeholders translate differently with markup handling (markup_text)
            "markup": translator.markup,
            "placeholders": translator.markup_pattern.pattern,
        },
        "input": str(settings.input),
        "checkpoint": paths[0] if one else paths,
    }


def count_lines(path: Path) -> int:
    """Lines as iter_raw_lines yields them (a last line without "\\n" counts), read by it: a damaged or
    non-gzip .gz file, or one with no text, is its one-line error, raised before anything is written."""
    return sum(1 for _ in iter_raw_lines(path))


def input_chunks(path: Path, chunk_lines: int) -> Iterator[tuple[int, list[bytes]]]:
    """(index, raw lines) of each chunk of `chunk_lines` input lines, the last one shorter."""
    lines = iter_raw_lines(path)
    for index in itertools.count():
        raws = list(itertools.islice(lines, chunk_lines))
        if not raws:
            return
        yield index, raws


def chunk_seed(seed: int, index: int) -> int:
    """Chunk `index`'s sampling seed: a function of decode.seed and the index only, so a resumed run
    draws what an uninterrupted one draws, and no two chunks repeat each other's draws."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{index}".encode()).digest()[:4], "big") & 0x7FFFFFFF


def read_chunk(raws: list[bytes], first: int, settings: Settings) -> tuple[list[str], int, int]:
    """(normalised non-blank lines, blank lines, lines with invalid UTF-8 replaced); `first` is the
    number of the first line in the file, for errors."""
    texts, empty, replaced = [], 0, 0
    for number, raw in enumerate(raws, start=first):
        try:
            text, damaged = decode_line(raw, settings.input, number, settings.encoding_errors)
        except UserError as error:  # its fix names the data config's key: ours is encoding_errors=
            where = str(error).split(";")[0]
            raise UserError(f"{where}; fix the file or pass encoding_errors=replace") from None
        text, replaced = normalize(text), replaced + damaged
        if text:
            texts.append(text)
        else:
            empty += 1
    return texts, empty, replaced


def translate_texts(
    translator: Translator, texts: list[str], options: SearchOptions, max_tokens: int,
    on_batch: Callable[[int], Any] | None, *, confidence: bool = False,
) -> list[Translation]:  # fmt: skip
    """One Translation per text, as Translator.translate gives it (long lines: its long_lines policy;
    a line break inside a translation becomes a space). `confidence`: with its mean_log_prob."""
    if not texts:
        return []
    encoded = translator.encode(texts)
    results = translator.search(encoded.sources, options, max_tokens=max_tokens, on_batch=on_batch,
                                confidence=confidence)  # fmt: skip
    best = [nbest[0] for nbest in translator.translations(encoded, results, confidence=confidence)]
    return [dataclasses.replace(t, text=t.text.replace("\n", " ")) if "\n" in t.text else t for t in best]


class Progress:
    """A tqdm bar over input lines (sentences/s, ETA); without one, a log line per chunk with the same."""

    def __init__(self, job: Job, total: int, done: int, chunks: int, *, bar: bool) -> None:
        self.log, self.total, self.done, self.start_done, self.chunks = job.log, total, done, done, chunks
        self.start, self.shown = time.perf_counter(), 0
        self.bar = None
        if bar:
            self.bar = tqdm(total=total, initial=done, unit="sent", desc=job.label, file=sys.stderr)

    def on_batch(self, lines: int, sentences: int) -> Callable[[int], None] | None:
        """A chunk's per-batch callback: moves the bar in proportion, within the chunk's lines."""
        self.shown = 0
        if self.bar is None:
            return None

        def moved(count: int) -> None:
            step = min(self.shown + round(count * lines / max(sentences, 1)), lines) - self.shown
            self.bar.update(step)  # type: ignore[union-attr]
            self.shown += step

        return moved

    def chunk_done(self, index: int, lines: int) -> None:
        self.done += lines
        if self.bar is not None:
            self.bar.update(lines - self.shown)
            return
        seconds = time.perf_counter() - self.start
        rate = (self.done - self.start_done) / max(seconds, 1e-9)
        eta = tqdm.format_interval((self.total - self.done) / max(rate, 1e-9))
        self.log.info("chunk %d/%d done: %d/%d lines, %.1f sentences/s, ETA %s",
                      index + 1, self.chunks, self.done, self.total, rate, eta)  # fmt: skip

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_chunks(
    job: Job, translator: Translator, settings: Settings, out: store.OutputDir, progress: Progress,
    done: dict[int, store.ChunkStats],
) -> list[store.ChunkStats]:  # fmt: skip
    """Translate and save every chunk that is not done; the stats of all of them, in order."""
    every = []
    for index, raws in input_chunks(settings.input, settings.chunk_lines):
        if index in done and done[index].lines == len(raws):
            every.append(done[index])
            continue
        texts, empty, replaced = read_chunk(raws, index * settings.chunk_lines + 1, settings)
        options = translator.options.replace(seed=chunk_seed(translator.options.seed, index))
        start = time.perf_counter()
        on_batch = progress.on_batch(len(raws), len(texts))
        translations = translate_texts(translator, texts, options, settings.max_tokens, on_batch,
                                       confidence=job.confidence)  # fmt: skip
        rows = job.rows(texts, translations)
        stats = store.ChunkStats(
            index=index, lines=len(raws), pairs=len(rows), empty=empty, untranslated=len(texts) - len(rows),
            replaced=replaced, seconds=time.perf_counter() - start,
        )  # fmt: skip
        store.save_chunk(out, stats, rows)
        progress.chunk_done(index, len(raws))
        every.append(stats)
    return every


def translate_file(
    job: Job, translator: Translator, settings: Settings, out: store.OutputDir, total: int,
    claim: dict[str, Any],
) -> tuple[list[store.ChunkStats], int]:  # fmt: skip
    """Every chunk of the input translated and saved, resuming a run with the same fingerprint (`claim`);
    (the stats of all chunks, how many were done before). Call it holding the directory's lock."""
    store.claim(settings.output_dir, claim, force=settings.force, layout=job.layout)
    out.remove_abandoned_temporaries()
    done = out.done_chunks()
    chunks = -(-total // settings.chunk_lines)
    job.log.info("%s: %s (%d lines, %d chunks, %d done) with %s, engine %s on %s", job.label,
                 settings.input, total, chunks, len(done), translator.options.describe(),
                 translator.engine.name, translator.device)  # fmt: skip
    show = sys.stderr.isatty() if settings.progress_bar is None else settings.progress_bar
    progress = Progress(job, total, sum(c.lines for c in done.values()), chunks, bar=show)
    try:
        stats = run_chunks(job, translator, settings, out, progress, done)
    finally:
        progress.close()
    return stats, len(done)


def summary(
    translator: Translator, cfg: DictConfig, settings: Settings, chunks: Sequence[store.ChunkStats],
    resumed: int, outputs: dict[str, Path], wall: float,
) -> dict[str, Any]:  # fmt: skip
    """report.json: the counts, the translation time summed over chunks (this run's and any earlier
    run's, model loading and file passes apart), the speed and the settings."""
    sentences = sum(c.pairs + c.untranslated for c in chunks)
    seconds = sum(c.seconds for c in chunks)
    paths = [str(path) for path in settings.checkpoints]
    return {
        "input": str(settings.input), "checkpoint": paths[0] if len(paths) == 1 else paths,
        "engine": translator.engine.name, "device": str(translator.device),
        "precision": str(cfg.precision), "quantization": str(cfg.quantization),
        "decode": dataclasses.asdict(translator.options), "chunk_lines": settings.chunk_lines,
        "max_tokens": settings.max_tokens, "threads": torch.get_num_threads(),
        "lines": sum(c.lines for c in chunks), "sentences": sentences,
        "pairs": sum(c.pairs for c in chunks), "empty_lines": sum(c.empty for c in chunks),
        "empty_translations": sum(c.untranslated for c in chunks),
        "replaced_lines": sum(c.replaced for c in chunks), "chunks": len(chunks), "chunks_resumed": resumed,
        "seconds": seconds, "sentences_per_second": sentences / max(seconds, 1e-9), "wall_seconds": wall,
        "outputs": {name: str(path) for name, path in outputs.items()},
    }  # fmt: skip


def write_report(report: dict[str, Any], directory: Path) -> Path:
    """report.json in `directory`, written whole (a temporary file renamed); its path."""
    path = directory / store.REPORT_FILE
    with atomic_output(path, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(report, indent=2) + "\n")
    return path


def log_skipped(job: Job, report: dict[str, Any]) -> None:
    """The input lines that gave no pair, if any: blank ones, and those whose translation was empty."""
    if report["empty_lines"]:
        job.log.info("skipped %d blank input lines (no pair)", report["empty_lines"])
    if report["empty_translations"]:
        job.log.warning("skipped %d lines whose translation came out empty", report["empty_translations"])


__all__ = [
    "Job",
    "Settings",
    "check_suffixes",
    "checkpoint_digest",
    "chunk_seed",
    "count_lines",
    "fingerprint",
    "log_skipped",
    "model_languages",
    "read_settings",
    "summary",
    "translate_file",
    "translate_texts",
    "write_report",
]  # fmt: skip

"""seq2seq-backtranslate: monolingual target-language text and a reverse model in, synthetic parallel data.

seq2seq-backtranslate checkpoint=runs/bible.es-en/best.pt input=mono.es output_dir=bt/mono
seq2seq-backtranslate checkpoint=exported/es-en input=mono.es output_dir=bt/mono quantization=int8 \
    decode=sample decode.top_k=10

The reverse model (target -> source) translates each monolingual line: its translation is the synthetic
source, the line itself the target. The input is streamed in chunks of `chunk_lines` lines, each saved
whole as it is done (seq2seq.cli.backtranslate_dir), so memory stays flat in the file size, and a run
that is stopped, even by kill -9, continues where it stopped when started again with the same settings.
Each chunk samples from its own seed, derived from decode.seed and its index, so a resumed run writes
the same bytes as an uninterrupted one.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli import backtranslate_dir as store
from seq2seq.cli.launch import config_dir, exit_on_user_error
from seq2seq.cli.setting_checks import number_setting, progress_bar_setting
from seq2seq.cli.translator_config import translator_from_config
from seq2seq.data.binarize import file_digest
from seq2seq.data.corpus import check_policy, decode_line, iter_raw_lines, normalize
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.exported import read_metadata
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.backtranslate")
LANGUAGE = re.compile(r"[A-Za-z0-9_-]+")  # a file-name suffix


@dataclass(frozen=True)
class Settings:
    """The command's settings that are not the Translator's, checked."""

    checkpoint: Path
    input: Path
    output_dir: Path
    chunk_lines: int
    max_tokens: int
    encoding_errors: str
    force: bool
    progress_bar: bool | None  # None: on a terminal


def read_settings(cfg: DictConfig) -> Settings:
    """Check the settings that need no model, so that a mistake stops the run before anything loads."""
    if OmegaConf.is_list(cfg.checkpoint):
        raise UserError("checkpoint= takes one reverse model (a .pt file or an exported directory), "
                        "not a list")  # fmt: skip
    if str(cfg.input) == "-":
        raise UserError("input=- (stdin) cannot be resumed or counted; pass a file (plain or .gz)")
    checkpoint, source = _absolute(cfg.checkpoint), _absolute(cfg.input)
    if not checkpoint.exists():
        raise UserError(f"checkpoint={checkpoint} does not exist; pass the reverse model (target -> "
                        "source): a .pt file of seq2seq-train or a directory of seq2seq-export")  # fmt: skip
    if not source.is_file():
        what = "is not a file" if source.exists() else "does not exist"
        raise UserError(f"input={source} {what}; pass a monolingual text file in the target language, one "
                        "sentence per line (plain or .gz)")  # fmt: skip
    output_dir = _absolute(cfg.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise UserError(f"output_dir={output_dir} is a file; pass a directory (new, or an earlier run's)")
    check_policy(str(cfg.encoding_errors))
    if not isinstance(cfg.force, bool):
        raise UserError(f"force={cfg.force!r} must be true or false")
    for key in ("src_lang", "tgt_lang"):
        if cfg[key] is not None and not LANGUAGE.fullmatch(str(cfg[key])):
            raise UserError(f"{key}={cfg[key]!r} is not a file suffix; use letters, digits, - or _ (e.g. en)")
    return Settings(
        checkpoint=checkpoint, input=source, output_dir=output_dir,
        chunk_lines=number_setting(cfg.chunk_lines, setting="chunk_lines", minimum=1),
        max_tokens=number_setting(cfg.max_tokens, setting="max_tokens", minimum=1),
        encoding_errors=str(cfg.encoding_errors), force=cfg.force,
        progress_bar=progress_bar_setting(cfg.progress_bar),
    )  # fmt: skip


def _absolute(path: Any) -> Path:
    return Path(hydra.utils.to_absolute_path(str(path)))


def load_translator(cfg: DictConfig, settings: Settings) -> Translator:
    """The reverse model, with the search of the `decode` group (one output per line)."""
    translator = translator_from_config(cfg, checkpoint=settings.checkpoint)
    if translator.options.nbest != 1:
        raise UserError(f"decode.nbest={translator.options.nbest}: back-translation writes one source "
                        "per line; use decode.nbest=1 (for more, rerun with other decode.seed)")  # fmt: skip
    return translator


def languages(cfg: DictConfig, translator: Translator, checkpoint: Path) -> tuple[str, str]:
    """(src, tgt) suffixes of the synthetic corpus. By default the reverse model's languages swapped:
    its target is our source, its source (the monolingual text's language) our target."""
    model = translator.languages or exported_languages(checkpoint)
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
    done with strict holds no invalid bytes, so replace gives the same bytes and may finish the run."""
    return {
        "settings": {
            "input_sha256": file_digest(settings.input),
            "checkpoint_sha256": checkpoint_digest(settings.checkpoint),
            "engine": translator.engine.name,
            "precision": str(cfg.precision),
            "quantization": str(cfg.quantization),
            "decode": dataclasses.asdict(translator.options),
            "chunk_lines": settings.chunk_lines,
            "max_input_tokens": translator.max_input_tokens,
            "long_lines": translator.long_lines,
            "langs": {"src": langs[0], "tgt": langs[1]},
        },
        "input": str(settings.input),
        "checkpoint": str(settings.checkpoint),
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
    on_batch: Callable[[int], Any] | None,
) -> list[str]:  # fmt: skip
    """One translation per text, as Translator.translate gives it (long lines: its long_lines policy)."""
    if not texts:
        return []
    encoded = translator.encode(texts)
    results = translator.search(encoded.sources, options, max_tokens=max_tokens, on_batch=on_batch)
    return [nbest[0][0].replace("\n", " ") for nbest in translator.join_pieces(encoded, results)]


class Progress:
    """A tqdm bar over input lines (sentences/s, ETA); without one, a log line per chunk with the same."""

    def __init__(self, total: int, done: int, chunks: int, *, bar: bool) -> None:
        self.total, self.done, self.start_done, self.chunks = total, done, done, chunks
        self.start, self.shown = time.perf_counter(), 0
        self.bar = None
        if bar:
            self.bar = tqdm(total=total, initial=done, unit="sent", desc="back-translate", file=sys.stderr)

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
        log.info("chunk %d/%d done: %d/%d lines, %.1f sentences/s, ETA %s",
                 index + 1, self.chunks, self.done, self.total, rate, eta)  # fmt: skip

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_chunks(
    translator: Translator, settings: Settings, out: store.OutputDir, progress: Progress,
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
        translations = translate_texts(translator, texts, options, settings.max_tokens, on_batch)
        pairs = [(source, target) for source, target in zip(translations, texts) if source]
        stats = store.ChunkStats(
            index=index, lines=len(raws), pairs=len(pairs), empty=empty, untranslated=len(texts) - len(pairs),
            replaced=replaced, seconds=time.perf_counter() - start,
        )  # fmt: skip
        store.save_chunk(out, stats, pairs)
        progress.chunk_done(index, len(raws))
        every.append(stats)
    return every


def summary(
    translator: Translator, cfg: DictConfig, settings: Settings, chunks: list[store.ChunkStats],
    resumed: int, corpus: tuple[Path, Path], wall: float,
) -> dict[str, Any]:  # fmt: skip
    """report.json: the counts, the translation time summed over chunks (this run's and any earlier
    run's, model loading and file passes apart), the speed and the settings."""
    sentences = sum(c.pairs + c.untranslated for c in chunks)
    seconds = sum(c.seconds for c in chunks)
    return {
        "input": str(settings.input), "checkpoint": str(settings.checkpoint),
        "engine": translator.engine.name, "device": str(translator.device),
        "precision": str(cfg.precision), "quantization": str(cfg.quantization),
        "decode": dataclasses.asdict(translator.options), "chunk_lines": settings.chunk_lines,
        "max_tokens": settings.max_tokens, "threads": torch.get_num_threads(),
        "lines": sum(c.lines for c in chunks), "sentences": sentences,
        "pairs": sum(c.pairs for c in chunks), "empty_lines": sum(c.empty for c in chunks),
        "empty_translations": sum(c.untranslated for c in chunks),
        "replaced_lines": sum(c.replaced for c in chunks), "chunks": len(chunks), "chunks_resumed": resumed,
        "seconds": seconds, "sentences_per_second": sentences / max(seconds, 1e-9), "wall_seconds": wall,
        "outputs": {"src": str(corpus[0]), "tgt": str(corpus[1])},
    }  # fmt: skip


@exit_on_user_error
def backtranslate(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING if cfg.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    began = time.perf_counter()
    settings = read_settings(cfg)
    total = count_lines(settings.input)  # reads the whole input before a model loads or a file is written
    translator = load_translator(cfg, settings)
    langs = languages(cfg, translator, settings.checkpoint)
    out = store.OutputDir(settings.output_dir, *langs)
    with store.holding(settings.output_dir):
        store.claim(settings.output_dir, fingerprint(translator, settings, cfg, langs), force=settings.force)
        out.remove_abandoned_temporaries()
        done = out.done_chunks()
        chunks = -(-total // settings.chunk_lines)
        log.info("back-translating %s (%d lines, %d chunks, %d done) with %s, engine %s on %s",
                 settings.input, total, chunks, len(done), translator.options.describe(),
                 translator.engine.name, translator.device)  # fmt: skip
        show = sys.stderr.isatty() if settings.progress_bar is None else settings.progress_bar
        progress = Progress(total, sum(c.lines for c in done.values()), chunks, bar=show)
        try:
            stats = run_chunks(translator, settings, out, progress, done)
        finally:
            progress.close()
        corpus = out.concatenate(len(stats))
        report = summary(translator, cfg, settings, stats, len(done), corpus, time.perf_counter() - began)
        with atomic_output(settings.output_dir / store.REPORT_FILE, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(report, indent=2) + "\n")
    log_summary(report, settings.output_dir / store.REPORT_FILE)
    return report


def log_summary(report: dict[str, Any], path: Path) -> None:
    if report["empty_lines"]:
        log.info("skipped %d blank input lines (no pair)", report["empty_lines"])
    if report["empty_translations"]:
        log.warning("skipped %d lines whose translation came out empty", report["empty_translations"])
    log.info("back-translated %d sentences in %.1f s (%.1f sentences/s, engine %s): %d pairs in %s and "
             "%s; report %s", report["sentences"], report["seconds"], report["sentences_per_second"],
             report["engine"], report["pairs"], *report["outputs"].values(), path)  # fmt: skip


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="backtranslate")
def main(cfg: DictConfig) -> None:
    backtranslate(cfg)


if __name__ == "__main__":
    main()

"""Translating a whole file into a corpus, chunk by chunk, resumable: what back-translation and
distillation share.

The input is streamed in chunks of `chunk_lines` lines, each saved whole as it is done
(seq2seq.corpus_translation.output_dir), so memory stays flat in the file size, and a run that is
stopped, even by kill -9, continues where it stopped when started again with the same settings. Each
chunk samples from its own seed, derived from decode.seed and its index, so a resumed run writes the
same bytes as an uninterrupted one. A run says, as a `Job`, what its files are called and which
columns a chunk's translations become (back-translation: translation then line; distillation: line,
translation, the teacher's score). Every chunk is translated by `Translator.translate`, the one
translation path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seq2seq.corpus_translation import output_dir as store
from seq2seq.corpus_translation.input_lines import input_chunks, read_chunk
from seq2seq.corpus_translation.progress import Progress
from seq2seq.corpus_translation.settings import CorpusSettings
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.confidence import Translation
from seq2seq.inference.translator import Translator

Rows = Callable[[list[str], list[Translation]], list[tuple[str, ...]]]


@dataclass(frozen=True)
class Job:
    """One kind of run's way of turning a file into a corpus."""

    layout: store.Layout  # its files' names
    label: str  # the progress bar's label ("back-translate")
    log: logging.Logger
    rows: Rows  # (non-blank input lines, their translations) -> a chunk's rows, one string per file
    confidence: bool = False  # search with per-token log-probabilities (Translation.mean_log_prob)


def chunk_seed(seed: int, index: int) -> int:
    """Chunk `index`'s sampling seed: a function of decode.seed and the index only, so a resumed run
    draws what an uninterrupted one draws, and no two chunks repeat each other's draws."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{index}".encode()).digest()[:4], "big") & 0x7FFFFFFF


def translate_texts(
    translator: Translator, texts: list[str], options: SearchOptions, max_tokens: int,
    on_batch: Callable[[int], Any] | None, *, confidence: bool = False,
) -> list[Translation]:  # fmt: skip
    """One Translation per text, as Translator.translate gives it (long lines: its long_lines policy;
    a line break inside a translation becomes a space). `confidence`: with its mean_log_prob."""
    if not texts:
        return []
    best = translator.translate(texts, options=options, max_tokens=max_tokens, confidence=confidence,
                                on_batch=on_batch)  # fmt: skip
    return [dataclasses.replace(t, text=t.text.replace("\n", " ")) if "\n" in t.text else t for t in best]


def run_chunks(
    job: Job, translator: Translator, settings: CorpusSettings, out: store.OutputDir, progress: Progress,
    done: dict[int, store.ChunkStats],
) -> list[store.ChunkStats]:  # fmt: skip
    """Translate and save every chunk that is not done; the stats of all of them, in order."""
    every = []
    for index, raws in input_chunks(settings.input, settings.chunk_lines):
        if index in done and done[index].lines == len(raws):
            every.append(done[index])
            continue
        first = index * settings.chunk_lines + 1
        texts, empty, replaced = read_chunk(raws, first, settings.input, settings.encoding_errors)
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
    job: Job, translator: Translator, settings: CorpusSettings, out: store.OutputDir, total: int,
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
    progress = Progress(job.log, job.label, total, sum(c.lines for c in done.values()), chunks, bar=show)
    try:
        stats = run_chunks(job, translator, settings, out, progress, done)
    finally:
        progress.close()
    return stats, len(done)


__all__ = ["Job", "chunk_seed", "translate_file", "translate_texts"]

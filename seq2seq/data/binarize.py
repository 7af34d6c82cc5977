"""Encode a parallel corpus once, in parallel worker processes, into memory-mappable arrays on disk.

The corpus is read as raw lines in chunks; workers decode, normalise and encode each chunk; the
results are appended, in corpus order, to the arrays of a temporary directory (token_arrays.py)
that is renamed into the cache when complete. Peak memory is a few chunks, whatever the corpus size.
The cache key hashes the bytes of both files, the decoding policy and the tokenizer model(s), so a
changed input never reads a stale cache; an interrupted build leaves only a temporary directory,
which no reader trusts and the next build removes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import numpy as np
from tqdm import tqdm

from seq2seq.data.corpus import (
    CorpusStats,
    check_policy,
    decode_line,
    iter_line_pairs,
    iter_raw_lines,
    normalize,
)
from seq2seq.data.dataset import ParallelDataset, token_dtype
from seq2seq.data.token_arrays import CorruptArrays, EncodedWriter, open_encoded
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes
from seq2seq.files import build_directory_atomically

log = logging.getLogger(__name__)

CACHE_VERSION = 3  # bump when normalisation or the array layout changes
CHUNK_PAIRS = 20_000  # pairs per worker task: sets the peak memory of a build, not the result


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, read in blocks; remembered per (path, size, mtime) within a process."""
    stat = Path(path).stat()
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    del size, mtime_ns  # part of the cache key only
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(*parts: str | bytes) -> str:
    digest = hashlib.sha256(f"binarize-v{CACHE_VERSION}".encode())
    for part in parts:
        data = part if isinstance(part, bytes) else part.encode()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:24]


def default_workers() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass
class Task:
    """Raw lines of one chunk: pairs first_line, first_line + 1, ... of the two files."""

    first_line: int
    src: list[bytes]
    tgt: list[bytes]
    names: tuple[str, str]
    encoding_errors: str


@dataclass
class EncodedChunk:
    tokens: dict[str, np.ndarray]  # per side: the sentences' ids back to back, each ending in eos
    lengths: dict[str, np.ndarray]  # per side: tokens per sentence, eos included
    stats: CorpusStats
    replaced: dict[str, int]  # per side: lines whose invalid UTF-8 was replaced


_WORKER_TOKENIZERS: dict[str, TextTokenizer] = {}


def _start_worker(models: dict[str, bytes]) -> None:
    _WORKER_TOKENIZERS.update({side: tokenizer_from_bytes(model) for side, model in models.items()})


def encode_chunk(task: Task) -> EncodedChunk:
    """Decode, normalise and encode one chunk with the process's tokenizers (see `_start_worker`)."""
    texts, replaced = {}, {}
    for side, raws, name in (("src", task.src, task.names[0]), ("tgt", task.tgt, task.names[1])):
        decoded = [
            decode_line(raw, name, task.first_line + i, task.encoding_errors) for i, raw in enumerate(raws)
        ]
        texts[side] = [normalize(text) for text, _ in decoded]
        replaced[side] = sum(damaged for _, damaged in decoded)
    stats = CorpusStats()
    for source, target in zip(texts["src"], texts["tgt"]):
        stats.add(source, target)
    tokens, lengths = {}, {}
    for side in ("src", "tgt"):
        tokenizer = _WORKER_TOKENIZERS[side]
        ids = tokenizer.encode_batch(texts[side])
        tokens[side], lengths[side] = _with_eos(ids, tokenizer.eos_id, token_dtype(tokenizer.vocab_size))
    return EncodedChunk(tokens, lengths, stats, replaced)


def _with_eos(ids: list[list[int]], eos_id: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Flat ids with eos after every sentence, and each sentence's length including it."""
    lengths = np.fromiter((len(sentence) + 1 for sentence in ids), dtype=np.int32, count=len(ids))
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=dtype, count=int(lengths.sum()) - len(ids))
    ends = np.cumsum(lengths - 1)  # where each sentence's eos goes among the tokens without eos
    return np.insert(flat, ends, eos_id).astype(dtype, copy=False), lengths


def raw_tasks(src: Path, tgt: Path, *, chunk_pairs: int, encoding_errors: str) -> Iterator[Task]:
    """The two files' raw lines, paired (unequal line counts are an error) and cut into chunks."""
    pairs = iter_line_pairs(iter_raw_lines(src), iter_raw_lines(tgt), src_name=src, tgt_name=tgt)
    first = 1
    while chunk := list(itertools.islice(pairs, chunk_pairs)):
        yield Task(first, [s for s, _ in chunk], [t for _, t in chunk], (str(src), str(tgt)), encoding_errors)
        first += len(chunk)


def encode_in_order(tasks: Iterator[Task], models: dict[str, bytes], workers: int) -> Iterator[EncodedChunk]:
    """encode_chunk over `tasks`, in order. With several workers (and more than one chunk: starting
    processes costs more than a small corpus takes) at most 2 * workers chunks are in flight."""
    head = list(itertools.islice(tasks, 2))
    tasks = itertools.chain(head, tasks)
    if workers <= 1 or len(head) < 2:
        _start_worker(models)
        yield from map(encode_chunk, tasks)
        return
    with _process_context().Pool(workers, _start_worker, (models,)) as pool:
        pending: deque = deque()
        for task in tasks:
            pending.append(pool.apply_async(encode_chunk, (task,)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def _process_context() -> multiprocessing.context.BaseContext:
    """fork where the platform has it: workers start at once, and the caller's script is not imported
    again (spawn would need an `if __name__ == "__main__"` guard in every script that prepares data).
    The workers only tokenize; they never touch the parent's PyTorch state or threads."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def build_encoded(
    src: Path, tgt: Path, directory: Path, *, tokenizers: tuple[TextTokenizer, TextTokenizer],
    encoding_errors: str, workers: int, chunk_pairs: int = CHUNK_PAIRS, progress: bool = True,
) -> CorpusStats:  # fmt: skip
    """Encode every line pair of the two files into `directory` (empty lines included, as just eos)."""
    check_policy(encoding_errors)
    models = {"src": tokenizers[0].to_bytes(), "tgt": tokenizers[1].to_bytes()}
    dtypes = {side: token_dtype(t.vocab_size) for side, t in zip(("src", "tgt"), tokenizers)}
    writer, stats, replaced = EncodedWriter(directory, dtypes), CorpusStats(), {"src": 0, "tgt": 0}
    tasks = raw_tasks(src, tgt, chunk_pairs=chunk_pairs, encoding_errors=encoding_errors)
    with tqdm(
        desc=f"encode {src.name}, {tgt.name}", unit="sent", disable=not progress, unit_scale=True
    ) as bar:
        for chunk in encode_in_order(tasks, models, workers):
            writer.append(chunk.tokens, chunk.lengths)
            stats.merge(chunk.stats)
            replaced = {side: replaced[side] + chunk.replaced[side] for side in replaced}
            bar.update(len(chunk.lengths["src"]))
    writer.close()
    (directory / "stats.json").write_text(json.dumps(stats.as_dict(), indent=2) + "\n", encoding="utf-8")
    for side, path in (("src", src), ("tgt", tgt)):
        if replaced[side]:
            log.warning("%s: replaced invalid UTF-8 in %d lines", path, replaced[side])
    return stats


def read_stats(directory: Path) -> CorpusStats:
    """The corpus statistics a build stored beside its arrays (pairs, empty pairs, words per side)."""
    try:
        return CorpusStats(**json.loads((directory / "stats.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as error:
        raise CorruptArrays(f"no readable stats.json ({error.__class__.__name__})") from None


def encoded_corpus(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    src_tokenizer: TextTokenizer,
    tgt_tokenizer: TextTokenizer,
    encoding_errors: str = "strict",
    cache_dir: str | Path | None = None,
    progress: bool = True,
    workers: int | None = None,
    chunk_pairs: int = CHUNK_PAIRS,
) -> tuple[ParallelDataset, CorpusStats]:
    """Every line pair of the two files, encoded, and the corpus statistics: mapped from the cache, built
    there first on a miss.

    Filtering happens afterwards on the lengths, so one cached encoding serves any filter setting.
    Without a cache directory the arrays are built in a temporary one and read into memory.
    """
    src, tgt = Path(src_path), Path(tgt_path)
    build = partial(
        build_encoded, src, tgt, tokenizers=(src_tokenizer, tgt_tokenizer), encoding_errors=encoding_errors,
        workers=workers or default_workers(), chunk_pairs=chunk_pairs, progress=progress,
    )  # fmt: skip
    if cache_dir is None:
        with tempfile.TemporaryDirectory(prefix="seq2seq-encoded-") as temporary:
            stats = build(Path(temporary))
            return open_encoded(Path(temporary), mmap=False), stats
    final = encoded_directory(src, tgt, (src_tokenizer, tgt_tokenizer), encoding_errors, Path(cache_dir))
    cached = _open_cached(final)
    if cached is not None:
        log.info("encoded corpus: cache hit %s", final)
        return cached, read_stats(final)
    log.info("encoded corpus: cache miss, encoding %s and %s", src, tgt)
    build_directory_atomically(final, build, what="encoded corpus")
    dataset = open_encoded(final)
    log.info("encoded corpus: saved %d pairs to %s", len(dataset), final)
    return dataset, read_stats(final)


def encoded_directory(
    src: Path, tgt: Path, tokenizers: tuple[TextTokenizer, TextTokenizer], encoding_errors: str, cache_dir: Path
) -> Path:
    """Where the cache keeps the encoding of these files by these tokenizers: the name holds their hashes."""
    models = (tokenizers[0].to_bytes(), tokenizers[1].to_bytes())
    key = cache_key(file_digest(src), file_digest(tgt), encoding_errors, *models)
    return cache_dir / f"{src.name}-{tgt.name}.{key}"


def _open_cached(directory: Path) -> ParallelDataset | None:
    if not directory.exists():
        return None
    try:
        read_stats(directory)
        return open_encoded(directory)
    except CorruptArrays as error:
        log.warning("encoded corpus: %s is incomplete or damaged (%s); rebuilding it", directory, error)
        shutil.rmtree(directory, ignore_errors=True)
        return None

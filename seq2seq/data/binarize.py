"""Encode a parallel corpus once, and keep the id arrays on disk keyed by what produced them.

The key hashes the bytes of both files, the decoding policy and the tokenizer model(s); a second
run with the same inputs loads the arrays in well under a second instead of reading, normalising
and encoding the text again. Any change to an input gives a new key, so a stale cache is never read.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from seq2seq.data.corpus import read_parallel
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.tokenizer import Tokenizer

log = logging.getLogger(__name__)

CACHE_VERSION = 1  # bump when normalisation or the array layout changes
_CHUNK = 10_000  # sentences per encode call (progress granularity)


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
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


def encode_texts(
    tokenizer: Tokenizer, texts: Sequence[str], *, desc: str, progress: bool = True
) -> list[list[int]]:
    """Token ids of every text (no specials), in chunks so a progress bar can follow."""
    ids: list[list[int]] = []
    with tqdm(total=len(texts), desc=desc, unit="sent", disable=not progress or len(texts) < _CHUNK) as bar:
        for start in range(0, len(texts), _CHUNK):
            chunk = texts[start : start + _CHUNK]
            ids.extend(tokenizer.encode_batch(chunk))
            bar.update(len(chunk))
    return ids


def encoded_corpus(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    encoding_errors: str = "strict",
    cache_dir: str | Path | None = None,
    progress: bool = True,
) -> ParallelDataset:
    """Every line pair of the two files, encoded (empty lines included, as just eos).

    Filtering happens afterwards on the lengths, so one cached encoding serves any filter setting.
    """
    cache_file = None
    if cache_dir is not None:
        key = cache_key(
            file_digest(src_path),
            file_digest(tgt_path),
            encoding_errors,
            src_tokenizer.to_bytes(),
            tgt_tokenizer.to_bytes(),
        )
        cache_file = Path(cache_dir) / f"{Path(src_path).name}-{Path(tgt_path).name}.{key}.npz"
        if cache_file.is_file():
            log.info("encoded corpus: cache hit %s", cache_file)
            return ParallelDataset.load(cache_file)
        log.info("encoded corpus: cache miss, encoding %s and %s", src_path, tgt_path)
    src_texts, tgt_texts = read_parallel(src_path, tgt_path, encoding_errors=encoding_errors)
    dataset = ParallelDataset.from_sequences(
        encode_texts(src_tokenizer, src_texts, desc=f"encode {Path(src_path).name}", progress=progress),
        encode_texts(tgt_tokenizer, tgt_texts, desc=f"encode {Path(tgt_path).name}", progress=progress),
        eos_id=src_tokenizer.eos_id,
    )
    if cache_file is not None:
        dataset.save(cache_file)
        log.info("encoded corpus: saved %d pairs to %s", len(dataset), cache_file)
    return dataset

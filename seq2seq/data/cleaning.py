"""Clean a parallel corpus once, through an ordered list of transforms (seq2seq.data.transforms).

The two files are streamed chunk by chunk through the transforms in order (each sees what the ones before
it kept), and the kept pairs are appended to plain files in `cache_dir/clean-<key>/`, beside a
summary.json that says, per transform, how many pairs it saw, removed and changed. Memory holds a chunk
at a time (plus whatever state a transform keeps, e.g. Deduplicate's 8 bytes per distinct pair).

The key hashes the bytes of both files, the decoding policy and every transform's class and settings(),
so changing any setting, or the order, cleans again into a new directory. The directory is built under a
temporary name and renamed when complete: an interrupted run leaves nothing that looks finished.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from seq2seq.data.binarize import file_digest
from seq2seq.data.corpus import check_policy, iter_parallel
from seq2seq.data.renamed_settings import first_names
from seq2seq.data.transforms import Pair, Transform, check_transform
from seq2seq.errors import UserError
from seq2seq.files import build_directory_atomically

log = logging.getLogger(__name__)

CLEAN_VERSION = 1  # bump when the output of clean_corpus changes for the same inputs and settings
SUMMARY = "summary.json"


@dataclass(frozen=True)
class CleanedCorpus:
    """The cleaned pair of files and what summary.json says about them."""

    src: Path
    tgt: Path
    summary: dict[str, Any]


@dataclass
class Counts:
    """One transform's share of a pass."""

    seen: int = 0
    removed: int = 0
    changed: int = 0
    seconds: float = 0.0


def describe(transform: Transform) -> dict[str, Any]:
    """The class path and settings of a transform: what summary.json records."""
    kind = type(transform)
    return {"target": f"{kind.__module__}.{kind.__qualname__}", "settings": transform.settings()}


def _keyed(transform: Transform) -> dict[str, Any]:
    """What the cache key hashes of a transform: `describe` with renamed settings under their first names,
    so a corpus cleaned before a rename is found again, not cleaned again."""
    described = describe(transform)
    return {**described, "settings": first_names(described["target"], described["settings"])}


def clean_key(src: Path, tgt: Path, transforms: Sequence[Transform], encoding_errors: str) -> str:
    """24 hex digits of a sha256 over the version, both files' bytes, the policy and the transforms."""
    described = json.dumps([_keyed(t) for t in transforms], sort_keys=True)
    digest = hashlib.sha256(f"clean-v{CLEAN_VERSION}".encode())
    for part in (file_digest(src), file_digest(tgt), encoding_errors, described):
        data = part.encode()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:24]


def output_names(src: Path, tgt: Path) -> tuple[str, str]:
    """The input names without ".gz" (the output is plain text), e.g. ("train.en", "train.es")."""
    names = (src.name.removesuffix(".gz"), tgt.name.removesuffix(".gz"))
    if names[0] == names[1]:
        raise UserError(
            f"{src} and {tgt} have the same name; give them language suffixes, like train.en and train.es"
        )
    return names


def clean_corpus(
    src: Path, tgt: Path, transforms: Sequence[Transform], *, cache_dir: Path,
    encoding_errors: str = "strict", progress: bool = False, chunk_pairs: int = 10_000,
) -> CleanedCorpus:  # fmt: skip
    """The pairs of `src`/`tgt` that every transform keeps (as they changed them), from the cache when a
    run with the same files and settings built them before. `chunk_pairs` sets the peak memory only."""
    check_policy(encoding_errors)
    for transform in transforms:
        check_transform(transform)
    src, tgt = Path(src), Path(tgt)
    names = output_names(src, tgt)
    final = Path(cache_dir) / f"clean-{clean_key(src, tgt, transforms, encoding_errors)}"
    cached = _read_cached(final, names)
    if cached is not None:
        log.info("cleaned corpus: cache hit %s (%s)", final, _kept_line(cached.summary))
        return cached
    log.info("cleaned corpus: cleaning %s and %s with %d transforms", src, tgt, len(transforms))
    clean = lambda directory: _clean_into(  # noqa: E731
        directory, src, tgt, transforms, names=names, encoding_errors=encoding_errors, progress=progress,
        chunk_pairs=chunk_pairs,
    )  # fmt: skip
    build_directory_atomically(final, clean, what="cleaned corpus")
    summary = _read_summary(final)
    log.info("cleaned corpus: %s in %s", _kept_line(summary), final)
    return CleanedCorpus(final / names[0], final / names[1], summary)


def _kept_line(summary: dict[str, Any]) -> str:
    return f"kept {summary['pairs_out']:,} of {summary['pairs_in']:,} pairs"


def chunks(pairs: Iterator[Pair], size: int) -> Iterator[list[Pair]]:
    while chunk := list(itertools.islice(pairs, size)):
        yield chunk


def _clean_into(
    directory: Path, src: Path, tgt: Path, transforms: Sequence[Transform], *, names: tuple[str, str],
    encoding_errors: str, progress: bool, chunk_pairs: int,
) -> None:  # fmt: skip
    """One pass: every chunk through the transforms, the kept pairs appended; summary.json last."""
    directory.mkdir(parents=True)
    for transform in transforms:
        transform.reset()
    counts = [Counts() for _ in transforms]
    totals = Counts()  # seen: pairs read; removed, changed: by any transform
    options = {"encoding": "utf-8", "newline": "\n"}
    with (
        open(directory / names[0], "w", **options) as src_out,  # type: ignore[call-overload]
        open(directory / names[1], "w", **options) as tgt_out,  # type: ignore[call-overload]
        tqdm(desc=f"clean {src.name}, {tgt.name}", unit="pair", unit_scale=True, disable=not progress) as bar,
    ):
        for chunk in chunks(iter_parallel(src, tgt, encoding_errors=encoding_errors), chunk_pairs):
            kept, changed = apply_transforms(chunk, transforms, counts)
            src_out.write("".join(source + "\n" for source, _ in kept))
            tgt_out.write("".join(target + "\n" for _, target in kept))
            totals.seen, totals.removed = totals.seen + len(chunk), totals.removed + len(chunk) - len(kept)
            totals.changed += changed
            bar.update(len(chunk))
    for transform, count in zip(transforms, counts):
        log.info("%s", _count_line(transform.name, count))
    summary = _summary(src, tgt, encoding_errors, transforms, counts, totals)
    (directory / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def _summary(
    src: Path, tgt: Path, encoding_errors: str, transforms: Sequence[Transform], counts: Sequence[Counts],
    totals: Counts,
) -> dict[str, Any]:  # fmt: skip
    """What summary.json holds: the inputs, each transform in order with its counts, and the totals."""
    return {
        "version": CLEAN_VERSION,
        "inputs": {
            "src": str(src),
            "tgt": str(tgt),
            "src_sha256": file_digest(src),
            "tgt_sha256": file_digest(tgt),
        },
        "encoding_errors": encoding_errors,
        "transforms": [{"name": t.name, **describe(t), **asdict(c)} for t, c in zip(transforms, counts)],
        "pairs_in": totals.seen,
        "pairs_out": totals.seen - totals.removed,
        "removed": totals.removed,
        "changed": totals.changed,
    }


def _count_line(name: str, count: Counts) -> str:
    """ "DropRepeats: removed 12 of 28,025 pairs", "MosesPunctuation: changed 301 of 28,025 pairs"."""
    if count.changed and not count.removed:
        return f"{name}: changed {count.changed:,} of {count.seen:,} pairs"
    also = f" and changed {count.changed:,}" if count.changed else ""
    return f"{name}: removed {count.removed:,}{also} of {count.seen:,} pairs"


def apply_transforms(
    chunk: list[Pair], transforms: Sequence[Transform], counts: Sequence[Counts]
) -> tuple[list[Pair], int]:
    """The pairs of `chunk` every transform keeps, in order, and how many of them differ from the input;
    `counts` gain each transform's share."""
    pairs, origins = chunk, list(range(len(chunk)))
    for transform, count in zip(transforms, counts):
        if not pairs:
            break
        start = time.perf_counter()
        results = transform(pairs)
        count.seconds += time.perf_counter() - start
        if len(results) != len(pairs):
            raise UserError(f"transform {transform.name} gave {len(results)} results for {len(pairs)} pairs; "
                            "a transform returns one entry (pair or None) per pair")  # fmt: skip
        count.seen += len(pairs)
        kept, kept_origins = [], []
        for before, after, origin in zip(pairs, results, origins):
            if after is None:
                count.removed += 1
                continue
            if after is not before and after != before:
                _check_pair(after, transform.name)
                count.changed += 1
            kept.append(after)
            kept_origins.append(origin)
        pairs, origins = kept, kept_origins
    return pairs, sum(1 for pair, origin in zip(pairs, origins) if pair != chunk[origin])


def _check_pair(pair: Any, name: str) -> None:
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(side, str) for side in pair)):
        raise UserError(f"transform {name} changed a pair into {pair!r}; a changed pair is a (source, "
                        "target) tuple of two strings")  # fmt: skip
    if any("\n" in side for side in pair):
        raise UserError(f"transform {name} put a line break into a sentence; the files hold one per line")


def _read_summary(directory: Path) -> dict[str, Any]:
    return json.loads((directory / SUMMARY).read_text(encoding="utf-8"))


def _read_cached(directory: Path, names: tuple[str, str]) -> CleanedCorpus | None:
    """The finished directory of the same key, if there is one (a damaged one is removed)."""
    if not directory.exists():
        return None
    try:
        summary = _read_summary(directory)
        if not all((directory / name).is_file() for name in names):
            raise OSError("a cleaned file is missing")
    except (OSError, ValueError) as error:
        log.warning("cleaned corpus: %s is damaged (%s); cleaning again", directory, error)
        shutil.rmtree(directory, ignore_errors=True)
        return None
    return CleanedCorpus(directory / names[0], directory / names[1], summary)

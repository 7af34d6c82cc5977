"""The output directory of a run that builds a corpus by translating a file in chunks (back-translation,
distillation): one run's settings, its finished chunks, its corpus.

    output_dir/<command>.json            the settings fingerprint of the run the directory holds
    output_dir/chunks/000000.<suffix>    chunk 0's lines of each file: the source side, the target side
                                         (and seq2seq-distill's teacher scores, `000000.scores`)
    output_dir/chunks/000000.json        chunk 0's done marker: its counts and its files' sizes
    output_dir/<prefix>.<suffix>         every chunk's lines in order, written at the end
    output_dir/report.json               sentences, time, speed, engine

A kill at any moment leaves each chunk complete or to be redone, never half of one: its files are
written under temporary names and renamed, the marker last, and a chunk counts as done only when its
marker is there and its files have the sizes it records. A rerun therefore skips exactly the done
chunks and translates the rest. The fingerprint keeps a rerun from taking on another run's chunks
(another input, model or search would mix two corpora in one), and a lock keeps two processes out of
one directory at once.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2seq.errors import UserError
from seq2seq.files import atomic_output, is_abandoned, this_host

log = logging.getLogger("seq2seq.backtranslate")

REPORT_FILE = "report.json"
CHUNK_DIR = "chunks"
SHOWN_DIFFERENCES = 3


@dataclass
class ChunkStats:
    """What one chunk held and produced; saved as its done marker."""

    index: int
    lines: int  # input lines, blank ones included
    pairs: int  # pairs written
    empty: int  # blank input lines (no pair)
    untranslated: int  # lines whose translation came out empty (no pair)
    replaced: int  # lines with invalid UTF-8 replaced (encoding_errors=replace)
    seconds: float  # time spent translating the chunk
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)  # bytes of each of its files


@dataclass(frozen=True)
class Layout:
    """What one command calls its files: `<command>.json` (the fingerprint), `.<command>.lock`, the
    corpus `<prefix>.<suffix>`; `run` names such a run in messages ("a back-translation")."""

    command: str
    prefix: str
    run: str

    @property
    def fingerprint_file(self) -> str:
        return f"{self.command}.json"

    @property
    def lock_file(self) -> str:
        return f".{self.command}.lock"


BACKTRANSLATION = Layout(command="backtranslate", prefix="bt", run="back-translation")
DISTILLATION = Layout(command="distill", prefix="distill", run="distillation")


class OutputDir:
    """The files of one run under `root`: per chunk, one file per suffix (the two languages first, as
    the corpus's source and target sides, then any other column such as the teacher's scores)."""

    def __init__(self, root: Path, *suffixes: str, layout: Layout = BACKTRANSLATION) -> None:
        self.root, self.files, self.layout = Path(root), tuple(suffixes), layout
        self.langs = self.files[:2]
        self.chunks = self.root / CHUNK_DIR

    def chunk_file(self, index: int, lang: str) -> Path:
        return self.chunks / f"{index:06d}.{lang}"

    def marker(self, index: int) -> Path:
        return self.chunks / f"{index:06d}.json"

    def corpus_file(self, suffix: str) -> Path:
        return self.root / f"{self.layout.prefix}.{suffix}"

    def done(self, index: int) -> ChunkStats | None:
        """Chunk `index`'s stats when it is complete (marker present, both files of its recorded sizes)."""
        try:
            stats = ChunkStats(**json.loads(self.marker(index).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None
        for suffix in self.files:
            path = self.chunk_file(index, suffix)
            if not path.is_file() or path.stat().st_size != stats.sizes.get(suffix):
                return None
        return stats

    def done_chunks(self) -> dict[int, ChunkStats]:
        """Every complete chunk, by index."""
        found = {}
        for marker in sorted(self.chunks.glob("[0-9]*.json")):
            if marker.stem.isdigit() and (stats := self.done(int(marker.stem))) is not None:
                found[int(marker.stem)] = stats
        return found

    def remove_abandoned_temporaries(self) -> None:
        """Delete the temporaries a killed run left (only those of dead processes, or a day old)."""
        for folder in (self.root, self.chunks):
            for temporary in folder.glob(".*.tmp") if folder.is_dir() else []:
                name = temporary.name[1:].removesuffix(".tmp").rsplit(".", 3)[0]  # see temporary_path
                if is_abandoned(temporary, folder / name):
                    temporary.unlink(missing_ok=True)

    def check_complete(self, chunks: int) -> None:
        """Stop with one line unless chunks 0 .. chunks-1 are all done."""
        missing = [index for index in range(chunks) if self.done(index) is None]
        if missing:
            raise UserError(f"chunk {missing[0]} of {self.chunks} is incomplete; run the same command again")

    def concatenate(self, chunks: int) -> tuple[Path, ...]:
        """<prefix>.<suffix> of every file: chunks 0 .. chunks-1 in order, each written whole and renamed."""
        self.check_complete(chunks)
        for suffix in self.files:
            with atomic_output(self.corpus_file(suffix), "wb") as out:
                for index in range(chunks):
                    with open(self.chunk_file(index, suffix), "rb") as part:
                        shutil.copyfileobj(part, out, 1 << 20)
        return tuple(self.corpus_file(suffix) for suffix in self.files)


def save_chunk(out: OutputDir, stats: ChunkStats, rows: Sequence[Sequence[str]]) -> None:
    """Write chunk `stats.index`: one file per suffix (row[i] goes to out.files[i]), then its marker
    (the commit)."""
    for column, suffix in enumerate(out.files):
        data = "".join(row[column] + "\n" for row in rows).encode("utf-8")
        with atomic_output(out.chunk_file(stats.index, suffix), "wb") as stream:
            stream.write(data)
        stats.sizes[suffix] = len(data)
    with atomic_output(out.marker(stats.index), "w", encoding="utf-8") as stream:
        stream.write(json.dumps(dataclasses.asdict(stats)) + "\n")


@contextmanager
def holding(root: Path, layout: Layout = BACKTRANSLATION) -> Iterator[None]:
    """Hold `root` for this process (the operating system drops the lock however the process ends), or
    stop with one line when another process holds it."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / layout.lock_file, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise UserError(f"output_dir={root} is in use by {holder}; wait for it to finish, or pass "
                            "another output_dir") from None  # fmt: skip
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} on {this_host()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def claim(root: Path, fingerprint: dict[str, Any], *, force: bool, layout: Layout = BACKTRANSLATION) -> None:
    """Make `root` this run's: resume when its fingerprint equals ours, start afresh when it holds no
    run; with other settings (or chunks of unknown origin), stop with one line, or with `force` delete
    the old run's chunks, corpus and report first. Call it holding the directory's lock."""
    fingerprint = json.loads(json.dumps(fingerprint))  # the form it takes in the file
    path = root / layout.fingerprint_file
    old = _read_fingerprint(path)
    if old is not None and old.get("settings") == fingerprint["settings"]:
        return
    foreign = old is None and (root / CHUNK_DIR).is_dir() and any((root / CHUNK_DIR).iterdir())
    if (old is not None or foreign) and not force:
        reason = f"chunks of an unknown run ({root / CHUNK_DIR}, no {layout.fingerprint_file})"
        if old is not None:
            changed = differences(old.get("settings"), fingerprint["settings"])
            reason = f"a {layout.run} with other settings ({changed})"
        raise UserError(f"output_dir={root} holds {reason}; use a new output_dir, or force=true to delete "
                        "its chunks and start again")  # fmt: skip
    if old is not None or foreign:
        log.warning("force=true: deleting the chunks, corpus and report of the run in %s", root)
        _clear(root, layout)
    with atomic_output(path, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(fingerprint, indent=2) + "\n")


def _read_fingerprint(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    return found if isinstance(found, dict) else {"settings": "unreadable"}


def _clear(root: Path, layout: Layout) -> None:
    """Delete an earlier run's chunks, report, fingerprint and corpus (every <prefix>.* file)."""
    shutil.rmtree(root / CHUNK_DIR, ignore_errors=True)
    for corpus in root.glob(f"{layout.prefix}.*"):
        corpus.unlink(missing_ok=True)
    (root / REPORT_FILE).unlink(missing_ok=True)
    (root / layout.fingerprint_file).unlink(missing_ok=True)


def differences(old: Any, new: dict[str, Any]) -> str:
    """The first few settings that differ, "key: old -> new", dotted keys for nested ones."""
    before, after = _flat(old), _flat(new)
    keys = [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    shown = [f"{key}: {_short(before.get(key))} -> {_short(after.get(key))}" for key in keys]
    more = len(shown) - SHOWN_DIFFERENCES
    return ", ".join(shown[:SHOWN_DIFFERENCES]) + (f" and {more} more" if more > 0 else "")


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        return {prefix or "settings": value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(_flat(item, f"{prefix}{key}.") if isinstance(item, dict) else {f"{prefix}{key}": item})
    return flat


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 20 else text[:8] + "..." + text[-8:]


__all__ = [
    "BACKTRANSLATION",
    "DISTILLATION",
    "REPORT_FILE",
    "ChunkStats",
    "Layout",
    "OutputDir",
    "claim",
    "holding",
    "save_chunk",
]

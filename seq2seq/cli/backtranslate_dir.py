"""The output directory of seq2seq-backtranslate: one run's settings, its finished chunks, its corpus.

    output_dir/backtranslate.json        the settings fingerprint of the run the directory holds
    output_dir/chunks/000000.<src>       chunk 0's synthetic sources (the model's translations)
    output_dir/chunks/000000.<tgt>       chunk 0's targets (the monolingual lines)
    output_dir/chunks/000000.json        chunk 0's done marker: its counts and both files' sizes
    output_dir/bt.<src>, bt.<tgt>        every chunk's pairs in order, written at the end
    output_dir/report.json               sentences, time, speed, engine (seq2seq.cli.backtranslate)

A kill at any moment leaves each chunk complete or to be redone, never half of one: both files are
written under temporary names and renamed, the marker last, and a chunk counts as done only when its
marker is there and both files have the sizes it records. A rerun therefore skips exactly the done
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

FINGERPRINT_FILE = "backtranslate.json"
REPORT_FILE = "report.json"
CHUNK_DIR = "chunks"
LOCK_FILE = ".backtranslate.lock"
CORPUS_PREFIX = "bt"
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
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)  # bytes of each side's file


class OutputDir:
    """The files of one back-translation run under `root`, named by the two language suffixes."""

    def __init__(self, root: Path, src_lang: str, tgt_lang: str) -> None:
        self.root, self.langs = Path(root), (src_lang, tgt_lang)
        self.chunks = self.root / CHUNK_DIR

    def chunk_file(self, index: int, lang: str) -> Path:
        return self.chunks / f"{index:06d}.{lang}"

    def marker(self, index: int) -> Path:
        return self.chunks / f"{index:06d}.json"

    def corpus_file(self, lang: str) -> Path:
        return self.root / f"{CORPUS_PREFIX}.{lang}"

    def done(self, index: int) -> ChunkStats | None:
        """Chunk `index`'s stats when it is complete (marker present, both files of its recorded sizes)."""
        try:
            stats = ChunkStats(**json.loads(self.marker(index).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None
        for lang in self.langs:
            path = self.chunk_file(index, lang)
            if not path.is_file() or path.stat().st_size != stats.sizes.get(lang):
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

    def concatenate(self, chunks: int) -> tuple[Path, Path]:
        """bt.<src> and bt.<tgt>: chunks 0 .. chunks-1 in order, each written whole and renamed."""
        missing = [index for index in range(chunks) if self.done(index) is None]
        if missing:
            raise UserError(f"chunk {missing[0]} of {self.chunks} is incomplete; run the same command again")
        for lang in self.langs:
            with atomic_output(self.corpus_file(lang), "wb") as out:
                for index in range(chunks):
                    with open(self.chunk_file(index, lang), "rb") as part:
                        shutil.copyfileobj(part, out, 1 << 20)
        return self.corpus_file(self.langs[0]), self.corpus_file(self.langs[1])


def save_chunk(out: OutputDir, stats: ChunkStats, pairs: Sequence[tuple[str, str]]) -> None:
    """Write chunk `stats.index`: the sources file, the targets file, then its marker (the commit)."""
    for side, lang in enumerate(out.langs):
        data = "".join(pair[side] + "\n" for pair in pairs).encode("utf-8")
        with atomic_output(out.chunk_file(stats.index, lang), "wb") as stream:
            stream.write(data)
        stats.sizes[lang] = len(data)
    with atomic_output(out.marker(stats.index), "w", encoding="utf-8") as stream:
        stream.write(json.dumps(dataclasses.asdict(stats)) + "\n")


@contextmanager
def holding(root: Path) -> Iterator[None]:
    """Hold `root` for this process (the operating system drops the lock however the process ends), or
    stop with one line when another process holds it."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a+", encoding="utf-8") as handle:
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


def claim(root: Path, fingerprint: dict[str, Any], *, force: bool) -> None:
    """Make `root` this run's: resume when its fingerprint equals ours, start afresh when it holds no
    run; with other settings (or chunks of unknown origin), stop with one line, or with `force` delete
    the old run's chunks, corpus and report first. Call it holding the directory's lock."""
    fingerprint = json.loads(json.dumps(fingerprint))  # the form it takes in the file
    path = root / FINGERPRINT_FILE
    old = _read_fingerprint(path)
    if old is not None and old.get("settings") == fingerprint["settings"]:
        return
    foreign = old is None and (root / CHUNK_DIR).is_dir() and any((root / CHUNK_DIR).iterdir())
    if (old is not None or foreign) and not force:
        reason = f"chunks of an unknown run ({root / CHUNK_DIR}, no {FINGERPRINT_FILE})"
        if old is not None:
            changed = differences(old.get("settings"), fingerprint["settings"])
            reason = f"a back-translation with other settings ({changed})"
        raise UserError(f"output_dir={root} holds {reason}; use a new output_dir, or force=true to delete "
                        "its chunks and start again")  # fmt: skip
    if old is not None or foreign:
        log.warning("force=true: deleting the chunks, corpus and report of the run in %s", root)
        _clear(root, old)
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


def _clear(root: Path, old: dict[str, Any] | None) -> None:
    shutil.rmtree(root / CHUNK_DIR, ignore_errors=True)
    langs = ((old or {}).get("settings") or {}).get("langs") or {}
    for lang in langs.values() if isinstance(langs, dict) else []:
        (root / f"{CORPUS_PREFIX}.{lang}").unlink(missing_ok=True)
    (root / REPORT_FILE).unlink(missing_ok=True)
    (root / FINGERPRINT_FILE).unlink(missing_ok=True)


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


__all__ = ["ChunkStats", "OutputDir", "claim", "holding", "save_chunk"]

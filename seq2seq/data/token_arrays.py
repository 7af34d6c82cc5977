"""An encoded corpus on disk: one directory of flat .npy arrays, written chunk by chunk, mapped read-only.

    <dir>/src.ids.npy      all source tokens (eos after each sentence), uint16 when the vocabulary fits
    <dir>/src.offsets.npy  int64, pairs + 1: sentence i is ids[offsets[i]:offsets[i + 1]]
    <dir>/src.lengths.npy  int32, pairs: each sentence's length (what batching reads, 4 bytes a pair)
    <dir>/tgt.ids.npy, <dir>/tgt.offsets.npy, <dir>/tgt.lengths.npy
    <dir>/meta.json        format, version, pairs and token counts: what a reader checks first

Writing appends to each .npy behind a placeholder header and fills in the final length at the end, so
memory is bounded by one chunk. A writer works in a temporary directory that is renamed into place
only when complete; a reader refuses (CorruptArrays) any directory whose files disagree with meta.json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

import numpy as np

from seq2seq.data.dataset import ParallelDataset

FORMAT = "seq2seq-encoded-corpus"
VERSION = 2
SIDES = ("src", "tgt")


class CorruptArrays(Exception):
    """An encoded-corpus directory that is incomplete, truncated or not ours (the caller rebuilds it)."""


class NpyAppender:
    """A 1-D .npy file written in pieces: a header for length 0 first, the real length at `close()`."""

    def __init__(self, path: Path, dtype: np.dtype) -> None:
        self.path, self.dtype, self.length = path, np.dtype(dtype), 0
        self._handle: IO[bytes] = open(path, "wb")
        self._header_size = self._write_header(0)

    def _write_header(self, length: int) -> int:
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": (length,),
        }
        self._handle.seek(0)
        np.lib.format.write_array_header_1_0(self._handle, header)
        return self._handle.tell()

    def append(self, values: np.ndarray) -> None:
        self._handle.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.length += len(values)

    def close(self) -> None:
        """Write the final header (the same size as the placeholder: both pad to 64-byte multiples)."""
        end = self._handle.seek(0, os.SEEK_END)
        if self._write_header(self.length) != self._header_size:
            raise RuntimeError(f"{self.path}: .npy header size changed")  # cannot happen for 1-D arrays
        self._handle.seek(end)
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()


class EncodedWriter:
    """Appends encoded chunks of pairs to the four arrays of a directory."""

    def __init__(self, directory: Path, dtypes: dict[str, np.dtype]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.ids = {side: NpyAppender(directory / f"{side}.ids.npy", dtypes[side]) for side in SIDES}
        self.offsets = {side: NpyAppender(directory / f"{side}.offsets.npy", np.int64) for side in SIDES}
        self.lengths = {side: NpyAppender(directory / f"{side}.lengths.npy", np.int32) for side in SIDES}
        for appender in self.offsets.values():
            appender.append(np.zeros(1, dtype=np.int64))
        self.pairs = 0

    def append(self, tokens: dict[str, np.ndarray], lengths: dict[str, np.ndarray]) -> None:
        """One chunk: per side, the tokens of its sentences back to back and each sentence's length."""
        for side in SIDES:
            ends = self.ids[side].length + np.cumsum(lengths[side], dtype=np.int64)
            self.ids[side].append(tokens[side])
            self.offsets[side].append(ends)
            self.lengths[side].append(lengths[side])
        self.pairs += len(lengths["src"])

    def close(self) -> None:
        for appender in [*self.ids.values(), *self.offsets.values(), *self.lengths.values()]:
            appender.close()
        meta = {"format": FORMAT, "version": VERSION, "pairs": self.pairs}
        meta.update({f"{side}_tokens": self.ids[side].length for side in SIDES})
        (self.directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def open_encoded(directory: Path, *, mmap: bool = True) -> ParallelDataset:
    """The dataset stored in `directory`, its arrays mapped read-only (or read into memory)."""
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CorruptArrays(f"no readable meta.json ({error.__class__.__name__})") from None
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise CorruptArrays(f"format {meta.get('format')!r} version {meta.get('version')!r}, not ours")
    arrays = {}
    for side in SIDES:
        ids = _load(directory / f"{side}.ids.npy", mmap)
        offsets = _load(directory / f"{side}.offsets.npy", mmap)
        if len(ids) != meta[f"{side}_tokens"] or len(offsets) != meta["pairs"] + 1:
            raise CorruptArrays(
                f"{side} arrays hold {len(ids)} tokens and {len(offsets) - 1} pairs, not {meta}"
            )
        if len(offsets) and (offsets[0] != 0 or offsets[-1] != len(ids)):
            raise CorruptArrays(f"{side}.offsets.npy does not span {side}.ids.npy")
        lengths = _load(directory / f"{side}.lengths.npy", mmap)
        if len(lengths) != meta["pairs"]:
            raise CorruptArrays(f"{side}.lengths.npy holds {len(lengths)} pairs, not {meta['pairs']}")
        arrays[side] = (ids, offsets, lengths)
    src, tgt = arrays["src"], arrays["tgt"]
    return ParallelDataset(src[0], src[1], tgt[0], tgt[1], lengths=(src[2], tgt[2]))


def _load(path: Path, mmap: bool) -> np.ndarray:
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:  # missing, truncated, or a foreign file
        raise CorruptArrays(f"{path.name}: {error}") from None
    if array.ndim != 1:
        raise CorruptArrays(f"{path.name} is not a flat array")
    return array

"""Encoded sentence pairs, held as two flat id arrays with offsets (compact, and cheap to cache)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seq2seq.errors import UserError


class ParallelDataset:
    """Pairs of id sequences; every sequence ends with eos, exactly as the encoder and the loss see it.

    ``dataset[i]`` is ``(src_ids, tgt_ids)``: the source as the encoder reads it (tokens + eos) and
    the target output (tokens + eos); the decoder input is bos + the target output without its eos.
    ``src_lengths``/``tgt_lengths`` are therefore the lengths S and T the example takes in a batch.
    """

    def __init__(
        self, src_ids: np.ndarray, src_offsets: np.ndarray, tgt_ids: np.ndarray, tgt_offsets: np.ndarray
    ):
        if len(src_offsets) != len(tgt_offsets) or len(src_offsets) == 0:
            raise ValueError(
                "offset arrays must be non-empty and of equal length, "
                f"got {len(src_offsets)} and {len(tgt_offsets)}"
            )
        self.src_ids, self.src_offsets = src_ids, src_offsets
        self.tgt_ids, self.tgt_offsets = tgt_ids, tgt_offsets
        self.src_lengths = np.diff(src_offsets)
        self.tgt_lengths = np.diff(tgt_offsets)

    @classmethod
    def from_sequences(
        cls, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], *, eos_id: int
    ) -> ParallelDataset:
        """Build from token id lists without specials; eos is appended to every sequence."""
        if len(src) != len(tgt):
            raise ValueError(f"{len(src)} source but {len(tgt)} target sequences")
        return cls(*_flatten(src, eos_id), *_flatten(tgt, eos_id))

    def __len__(self) -> int:
        return len(self.src_lengths)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(index)
        if not -len(self) <= i < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} pairs")
        i %= len(self)
        src = self.src_ids[self.src_offsets[i] : self.src_offsets[i + 1]]
        tgt = self.tgt_ids[self.tgt_offsets[i] : self.tgt_offsets[i + 1]]
        return src, tgt

    def subset(self, indices: Sequence[int] | np.ndarray) -> ParallelDataset:
        """The pairs at ``indices``, in that order, as a new compact dataset."""
        index = np.asarray(indices, dtype=np.int64)
        src_ids, src_offsets = _gather(self.src_ids, self.src_offsets, index)
        tgt_ids, tgt_offsets = _gather(self.tgt_ids, self.tgt_offsets, index)
        return ParallelDataset(src_ids, src_offsets, tgt_ids, tgt_offsets)

    @property
    def n_tokens(self) -> int:
        return int(self.src_lengths.sum() + self.tgt_lengths.sum())

    def save(self, path: str | Path) -> None:
        """Write an .npz file atomically; concurrent writers (data-parallel ranks) use own temporaries."""
        file = Path(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_name(f"{file.name}.{os.getpid()}.tmp.npz")
        np.savez(
            temporary,
            src_ids=self.src_ids,
            src_offsets=self.src_offsets,
            tgt_ids=self.tgt_ids,
            tgt_offsets=self.tgt_offsets,
        )
        temporary.replace(file)

    @classmethod
    def load(cls, path: str | Path) -> ParallelDataset:
        try:
            with np.load(path) as arrays:
                return cls(arrays["src_ids"], arrays["src_offsets"], arrays["tgt_ids"], arrays["tgt_offsets"])
        except (OSError, KeyError, ValueError) as error:
            raise UserError(
                f"{path}: unreadable encoded corpus ({error}); delete it to rebuild the cache"
            ) from None


def _flatten(sequences: Sequence[Sequence[int]], eos_id: int) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(s) + 1 for s in sequences), dtype=np.int64, count=len(sequences))
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.full(int(offsets[-1]), eos_id, dtype=np.int32)
    for start, sequence in zip(offsets[:-1], sequences):
        ids[start : start + len(sequence)] = sequence
    return ids, offsets


def _gather(ids: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lengths = offsets[index + 1] - offsets[index]
    new_offsets = np.zeros(len(index) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    # Position of every output token in the input: its sequence's start plus its place in the sequence.
    starts = np.repeat(offsets[index] - new_offsets[:-1], lengths)
    return ids[starts + np.arange(int(new_offsets[-1]))], new_offsets

"""Encoded sentence pairs, held as two flat token arrays with offsets (memory-mapped from disk for training).

Filtering and subsets keep an index of rows, never a copy of the tokens, so a training process
holds a few integers per pair (lengths, the row index) however large the corpus is, and data-parallel
ranks that map the same files share one copy in the operating system's page cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class TokenLinks(Protocol):
    """Every stored pair's token links (seq2seq.data.piece_links.PieceLinks)."""

    def of(self, row: int) -> np.ndarray:
        """Stored pair `row`'s (source position, target position) links. Shapes: -> (L, 2)."""
        ...


class ParallelDataset:
    """Pairs of id sequences; every sequence ends with eos, exactly as the encoder and the loss see it.

    ``dataset[i]`` is ``(src_ids, tgt_ids)``: the source as the encoder reads it (tokens + eos) and
    the target output (tokens + eos); the decoder input is bos + the target output without its eos.
    ``src_lengths``/``tgt_lengths`` are therefore the lengths S and T the example takes in a batch.

    Storage: ``src_ids[src_offsets[r] : src_offsets[r + 1]]`` is stored pair r's source (likewise
    the target); ``rows`` (int64, or None for all, in order) says which stored pairs the dataset holds.
    """

    def __init__(
        self,
        src_ids: np.ndarray,
        src_offsets: np.ndarray,
        tgt_ids: np.ndarray,
        tgt_offsets: np.ndarray,
        rows: np.ndarray | None = None,
        lengths: tuple[np.ndarray, np.ndarray] | None = None,
        links: TokenLinks | None = None,
    ) -> None:
        if len(src_offsets) != len(tgt_offsets) or len(src_offsets) == 0:
            raise ValueError(
                "offset arrays must be non-empty and of equal length, "
                f"got {len(src_offsets)} and {len(tgt_offsets)}"
            )
        self.src_ids, self.src_offsets = src_ids, src_offsets
        self.tgt_ids, self.tgt_offsets = tgt_ids, tgt_offsets
        self.rows = rows
        self.stored_lengths = lengths  # every stored pair's lengths, when the storage has them (mapped)
        self.src_lengths = _lengths(src_offsets, rows, None if lengths is None else lengths[0])
        self.tgt_lengths = _lengths(tgt_offsets, rows, None if lengths is None else lengths[1])
        self.links = links  # every stored pair's token links (guided alignment), or None

    @classmethod
    def from_sequences(
        cls, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], *, eos_id: int
    ) -> ParallelDataset:
        """Build in memory from token id lists without specials; eos is appended to every sequence."""
        if len(src) != len(tgt):
            raise ValueError(f"{len(src)} source but {len(tgt)} target sequences")
        return cls(*flatten(src, eos_id), *flatten(tgt, eos_id))

    def __len__(self) -> int:
        return len(self.src_lengths)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(index)
        if not -len(self) <= i < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} pairs")
        row = self._row(i)
        src = self.src_ids[self.src_offsets[row] : self.src_offsets[row + 1]]
        tgt = self.tgt_ids[self.tgt_offsets[row] : self.tgt_offsets[row + 1]]
        return src, tgt

    def _row(self, index: int) -> int:
        index %= len(self)
        return index if self.rows is None else int(self.rows[index])

    def links_of(self, index: int) -> np.ndarray | None:
        """Pair `index`'s (source position, target position) token links (L, 2), or None without links."""
        return None if self.links is None else self.links.of(self._row(int(index)))

    def with_links(self, links: TokenLinks) -> ParallelDataset:
        """The same pairs, with every stored pair's links."""
        arrays = (self.src_ids, self.src_offsets, self.tgt_ids, self.tgt_offsets)
        return ParallelDataset(*arrays, self.rows, self.stored_lengths, links)

    def subset(self, indices: Sequence[int] | np.ndarray) -> ParallelDataset:
        """The pairs at ``indices``, in that order; shares the token arrays (no copy)."""
        index = np.asarray(indices, dtype=np.int64)
        rows = index if self.rows is None else self.rows[index]
        if len(self.src_offsets) <= np.iinfo(np.int32).max:
            rows = rows.astype(np.int32)  # 4 bytes a pair
        arrays = (self.src_ids, self.src_offsets, self.tgt_ids, self.tgt_offsets)
        return ParallelDataset(*arrays, rows, self.stored_lengths, self.links)

    @property
    def n_tokens(self) -> int:
        return int(self.src_lengths.sum(dtype=np.int64) + self.tgt_lengths.sum(dtype=np.int64))


def _lengths(offsets: np.ndarray, rows: np.ndarray | None, stored: np.ndarray | None) -> np.ndarray:
    """Tokens per pair as int32 (4 bytes a pair): of every stored pair, or of ``rows``; read from the
    stored lengths when there are some (then the offsets are not touched until a batch needs them)."""
    if stored is not None:
        return stored if rows is None else stored[rows]
    if rows is None:
        return np.diff(offsets).astype(np.int32)
    return (offsets[rows + 1] - offsets[rows]).astype(np.int32)


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type for ids below ``vocab_size``: uint16 for up to 65,536 pieces."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def flatten(sequences: Sequence[Sequence[int]], eos_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids with eos appended to each sequence, and their offsets (len(sequences) + 1, int64)."""
    lengths = np.fromiter((len(s) + 1 for s in sequences), dtype=np.int64, count=len(sequences))
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.full(int(offsets[-1]), eos_id, dtype=np.int32)
    for start, sequence in zip(offsets[:-1], sequences):
        ids[start : start + len(sequence)] = sequence
    return ids, offsets

"""Incremental-decoding state: per-layer self-attention K/V caches and precomputed cross-attention K/V."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


class KVCache:
    """One layer's self-attention keys and values, grown a few steps at a time.

    Storage doubles when full, so appending T steps copies O(T) elements in total rather than
    the O(T^2) of concatenating every step.
    """

    def __init__(self) -> None:
        self._k: Tensor | None = None  # (B, H, capacity, Dh)
        self._v: Tensor | None = None
        self.length = 0

    def append(self, k_new: Tensor, v_new: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new steps and return every key and value so far.

        Shapes: k_new, v_new (B, H, t, Dh) -> k, v (B, H, length + t, Dh)
        """
        steps = k_new.shape[2]
        if self._k is None or self.length + steps > self._k.shape[2]:
            self._grow(k_new, self.length + steps)
        self._k[:, :, self.length : self.length + steps] = k_new
        self._v[:, :, self.length : self.length + steps] = v_new
        self.length += steps
        return self._k[:, :, : self.length], self._v[:, :, : self.length]

    def _grow(self, like: Tensor, needed: int) -> None:
        capacity = max(needed, 2 * (self._k.shape[2] if self._k is not None else 8))
        batch, heads, _, head_dim = like.shape
        k = like.new_empty(batch, heads, capacity, head_dim)
        v = like.new_empty(batch, heads, capacity, head_dim)
        if self._k is not None:
            k[:, :, : self.length] = self._k[:, :, : self.length]
            v[:, :, : self.length] = self._v[:, :, : self.length]
        self._k, self._v = k, v

    def reorder(self, index: Tensor) -> None:
        """Keep rows `index` (beam search: the surviving hypotheses). Shapes: index (B',)."""
        if self._k is not None:
            self._k = self._k[:, :, : self.length].index_select(0, index)
            self._v = self._v[:, :, : self.length].index_select(0, index)


@dataclass
class DecoderState:
    """What `Seq2Seq.decode_step` needs between steps.

    caches:      one KVCache per decoder layer.
    cross_kv:    per layer, the memory's keys and values, each (N, H, S', Dh); computed once.
    memory_keep: (N, S') True = real (pooled) source position.
    memory_positions: (S',) positions of the (pooled) memory, for ALiBi in cross-attention.
    steps:       target tokens consumed so far (the next token's position).
    N is batch * beam.
    """

    caches: list[KVCache]
    cross_kv: list[tuple[Tensor, Tensor]]
    memory_keep: Tensor
    memory_positions: Tensor
    steps: int = 0

    @property
    def batch_size(self) -> int:
        return self.memory_keep.shape[0]

    def reorder(self, index: Tensor, *, memory: bool = True) -> DecoderState:
        """Select/reorder hypotheses in place (and return self).

        `memory=False` skips the cross-attention K/V, which is correct and cheaper when `index`
        only permutes beams within each sentence (their memories are identical).
        """
        for cache in self.caches:
            cache.reorder(index)
        if memory:
            self.cross_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.cross_kv]
            self.memory_keep = self.memory_keep.index_select(0, index)
        return self


__all__ = ["DecoderState", "KVCache"]

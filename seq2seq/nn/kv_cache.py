"""Incremental-decoding state: per-layer self-attention K/V caches and precomputed cross-attention K/V."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


class KVCache:
    """One layer's self-attention keys and values, grown a few steps at a time.

    Storage doubles when full, so appending T steps copies O(T) elements in total rather than
    the O(T^2) of concatenating every step.

    `reorder` is beam search's per-step cost besides the model itself, and it is memory traffic.
    On CPU it works in place: only the rows whose content changes are copied (beam search keeps
    each surviving beam in its parent's row, see seq2seq.decode.beam, so most rows stay put), and
    dropping rows (finished sentences) shifts the rest up and keeps the same storage, so decoding
    allocates nothing after the first step. On an accelerator, finding the changed rows would wait
    for the device: there it gathers every row into a second buffer of the same capacity, kept for
    the next reorder.
    """

    def __init__(self, capacity: int = 16) -> None:
        """`capacity`: steps the first allocation holds (a decoder that knows its length limit
        passes it, and the cache never grows)."""
        self.initial_capacity = max(1, capacity)
        self._k: Tensor | None = None  # (B, H, capacity, Dh)
        self._v: Tensor | None = None
        self._spare: tuple[Tensor, Tensor] | None = None  # reorder target, same shape as _k, _v
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

    def contents(self) -> tuple[Tensor, Tensor]:
        """Every key and value so far. Shapes: -> k, v (B, H, length, Dh)."""
        if self._k is None:
            raise RuntimeError("the cache is empty")
        return self._k[:, :, : self.length], self._v[:, :, : self.length]

    def _grow(self, like: Tensor, needed: int) -> None:
        capacity = max(needed, 2 * self._k.shape[2] if self._k is not None else self.initial_capacity)
        batch, heads, _, head_dim = like.shape
        k = like.new_empty(batch, heads, capacity, head_dim)
        v = like.new_empty(batch, heads, capacity, head_dim)
        if self._k is not None:
            k[:, :, : self.length] = self._k[:, :, : self.length]
            v[:, :, : self.length] = self._v[:, :, : self.length]
        self._k, self._v, self._spare = k, v, None

    def _new_buffer(self, shape: tuple[int, ...]) -> Tensor:
        return self._k.new_empty(shape)  # type: ignore[union-attr]

    def reorder(self, index: Tensor) -> None:
        """Keep rows `index` (beam search: the surviving hypotheses). Shapes: index (B',)."""
        if self._k is None:
            return
        moved = rows_to_move(index, self._k.shape[0])
        if moved is None:
            self.gather_rows(index)
        else:
            self.copy_rows(moved, index[moved], keep_rows=index.shape[0])

    def gather_rows(self, index: Tensor) -> None:
        """`reorder` by gathering every row into the spare buffer. Shapes: index (B',)."""
        if self._k is None:
            return
        shape = (index.shape[0], *self._k.shape[1:])  # (B', H, capacity, Dh)
        if self._spare is None or self._spare[0].shape != shape:
            self._spare = (self._new_buffer(shape), self._new_buffer(shape))
        k, v = self._spare
        filled = slice(0, self.length)
        torch.index_select(self._k[:, :, filled], 0, index, out=k[:, :, filled])
        torch.index_select(self._v[:, :, filled], 0, index, out=v[:, :, filled])
        self._spare = (self._k, self._v) if self._k.shape == shape else None
        self._k, self._v = k, v

    def copy_rows(self, targets: Tensor, sources: Tensor, keep_rows: int | None = None) -> None:
        """Row targets[i] becomes row sources[i], in place; then only the first `keep_rows` rows
        remain (all when None). Shapes: targets, sources (R,)."""
        if self._k is None:
            return
        if targets.numel():
            for buffer in (self._k, self._v):
                filled = buffer[:, :, : self.length]  # (B, H, length, Dh)
                filled.index_copy_(0, targets, filled.index_select(0, sources))  # read all, then write
        if keep_rows is not None and keep_rows < self._k.shape[0]:
            self._k, self._v, self._spare = self._k[:keep_rows], self._v[:keep_rows], None


class StaticKVCache(KVCache):
    """A KVCache whose buffers keep one shape for a whole search: a compiled decoder step serves every step.

    Both buffers are allocated once, for every step the search can take, and zero-filled. A step
    writes its keys and values at a position given as a tensor and attends over the whole buffer,
    masked to the filled part (`CacheSlot`), so no step's shapes depend on how far decoding has got
    (seq2seq.decode.compiled). `length` counts the filled steps for `reorder`, which copies only
    those; it is advanced by the caller after each step (`DecoderState.advance`).
    """

    def __init__(self, rows: int, heads: int, capacity: int, head_dim: int, *, like: Tensor) -> None:
        """Buffers (rows, heads, capacity, head_dim) of `like`'s dtype and device."""
        super().__init__(capacity)
        self._k = like.new_zeros(rows, heads, capacity, head_dim)
        self._v = like.new_zeros(rows, heads, capacity, head_dim)

    @property
    def buffers(self) -> tuple[Tensor, Tensor]:
        """The whole key and value buffers. Shapes: -> 2 x (B, H, capacity, Dh)."""
        return self._k, self._v  # type: ignore[return-value]

    def _new_buffer(self, shape: tuple[int, ...]) -> Tensor:
        # Steps past `length` are read too (masked): they must hold finite numbers, as 0 * NaN is NaN.
        return self._k.new_zeros(shape)  # type: ignore[union-attr]

    def append(self, k_new: Tensor, v_new: Tensor) -> tuple[Tensor, Tensor]:
        raise RuntimeError("a StaticKVCache is written through CacheSlot at a position tensor")


class CacheSlot:
    """What self-attention sees of a StaticKVCache during one step: `append` writes the new keys and
    values at `position` and returns the whole buffers (the step's mask hides the unfilled part)."""

    def __init__(self, keys: Tensor, values: Tensor, position: Tensor) -> None:
        """Shapes: keys, values (B, H, capacity, Dh); position (t,) long."""
        self.keys, self.values, self.position = keys, values, position

    def append(self, k_new: Tensor, v_new: Tensor) -> tuple[Tensor, Tensor]:
        """Shapes: k_new, v_new (B, H, t, Dh) -> k, v (B, H, capacity, Dh)."""
        self.keys.index_copy_(2, self.position, k_new)
        self.values.index_copy_(2, self.position, v_new)
        return self.keys, self.values


def rows_to_move(index: Tensor, rows: int) -> Tensor | None:
    """The rows an in-place reorder of `rows` rows to `index` must overwrite, or None where it
    cannot work in place (more rows than before, or not on CPU). Shapes: index (B',) -> (R,)."""
    if index.shape[0] > rows or index.device.type != "cpu":
        return None
    return (index != torch.arange(index.shape[0])).nonzero().squeeze(1)  # (R,)


@dataclass
class DecoderState:
    """What `Seq2Seq.decode_step` needs between steps.

    caches:      one KVCache per decoder layer, N rows (hypotheses).
    cross_kv:    per layer, the memory's keys and values, each (M, H, S', Dh); computed once.
    memory_keep: (M, S') True = real (pooled) source position.
    memory_positions: (S',) positions of the (pooled) memory, for ALiBi in cross-attention.
    group:       hypotheses per memory row, N = M * group: row n reads memory row n // group (beam
                 search keeps one copy of each sentence's memory for all its beams).
    steps:       target tokens consumed so far (the next token's position).
    position:    with StaticKVCache caches, `steps` as a (1,) long tensor (a compiled step reads it
                 without recompiling each step); None otherwise.
    """

    caches: list[KVCache]
    cross_kv: list[tuple[Tensor, Tensor]]
    memory_keep: Tensor
    memory_positions: Tensor
    group: int = 1
    steps: int = 0
    position: Tensor | None = None

    @property
    def batch_size(self) -> int:
        """N, the number of hypotheses."""
        return self.memory_keep.shape[0] * self.group

    def advance(self) -> None:
        """After a static step (one token for every row): every cache holds one more step."""
        self.steps += 1
        self.position += 1  # type: ignore[operator]
        for cache in self.caches:
            cache.length += 1

    def reorder(self, index: Tensor, *, memory: bool | Tensor = True) -> DecoderState:
        """Keep hypotheses `index` (N',), in that order, in place; returns self.

        memory=True:   any index; each kept hypothesis gets its own copy of its memory row (group 1).
        memory=False:  `index` only permutes hypotheses within their groups (beams within their
                       sentence): the memory stays as it is.
        memory=Tensor: (M',) the memory rows to keep, when `index` keeps whole groups in that order
                       (beam search dropping finished sentences): index[g * group + j] // group
                       must equal memory[g].
        """
        moved = rows_to_move(index, self.batch_size)  # the same for every layer
        sources = None if moved is None else index[moved]
        for cache in self.caches:
            if sources is None:
                cache.gather_rows(index)
            else:
                cache.copy_rows(moved, sources, keep_rows=index.shape[0])
        if memory is False:
            return self
        if memory is True:  # hypothesis n reads memory row n // group: one memory row per kept hypothesis
            memory, self.group = index // self.group, 1
        self.cross_kv = [(k.index_select(0, memory), v.index_select(0, memory)) for k, v in self.cross_kv]
        self.memory_keep = self.memory_keep.index_select(0, memory)
        return self


__all__ = ["CacheSlot", "DecoderState", "KVCache", "StaticKVCache"]

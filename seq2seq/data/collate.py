"""Turn a list of examples into padded batch tensors: source, decoder input, decoder output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from seq2seq.data.dataset import ParallelDataset


@dataclass
class Batch:
    """One padded batch.

    Shapes:
        src: (B, S) source ids, tokens + eos, right-padded with pad_id
        tgt_in: (B, T) decoder input, bos + tokens
        tgt_out: (B, T) decoder output (the labels), tokens + eos
        alignment: (L, 3) word links for guided alignment, or None: (row, position in tgt_out, position
            in src) for each linked pair of tokens
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    n_tgt_tokens: int  # non-pad labels: what a per-token loss is averaged over
    indices: list[int] = field(default_factory=list)  # dataset positions of the rows
    alignment: torch.Tensor | None = None

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        return Batch(
            src=self.src.to(device, non_blocking=non_blocking),
            tgt_in=self.tgt_in.to(device, non_blocking=non_blocking),
            tgt_out=self.tgt_out.to(device, non_blocking=non_blocking),
            n_tgt_tokens=self.n_tgt_tokens,
            indices=self.indices,
            alignment=None if self.alignment is None else self.alignment.to(device, non_blocking=non_blocking),
        )

    def __len__(self) -> int:
        return self.src.shape[0]


def collate(
    examples: Sequence[tuple[Sequence[int], Sequence[int]]],
    *,
    pad_id: int,
    bos_id: int,
    eos_id: int,
    indices: Sequence[int] | None = None,
    links: Sequence[np.ndarray | None] | None = None,
) -> Batch:
    """Pad ``(src_ids, tgt_ids)`` examples as ParallelDataset gives them (both ending in eos).
    ``links``: per example, its (source position, target position) token links (L, 2), or None for an
    example without; they become Batch.alignment."""
    if not examples:
        raise ValueError("cannot collate an empty list of examples")
    batch_size = len(examples)
    src_len = max(len(src) for src, _ in examples)
    tgt_len = max(len(tgt) for _, tgt in examples)
    src = np.full((batch_size, src_len), pad_id, dtype=np.int64)  # (B, S)
    tgt_in = np.full((batch_size, tgt_len), pad_id, dtype=np.int64)  # (B, T)
    tgt_out = np.full((batch_size, tgt_len), pad_id, dtype=np.int64)  # (B, T)
    for row, (source, target) in enumerate(examples):
        if len(source) == 0 or len(target) == 0 or source[-1] != eos_id or target[-1] != eos_id:
            raise ValueError(f"example {row} does not end with eos ({eos_id}) on both sides")
        src[row, : len(source)] = source
        tgt_out[row, : len(target)] = target
        tgt_in[row, 0] = bos_id
        tgt_in[row, 1 : len(target)] = target[:-1]
    n_tgt_tokens = sum(len(tgt) for _, tgt in examples)
    return Batch(
        src=torch.from_numpy(src),
        tgt_in=torch.from_numpy(tgt_in),
        tgt_out=torch.from_numpy(tgt_out),
        n_tgt_tokens=n_tgt_tokens,
        indices=[int(i) for i in indices] if indices is not None else list(range(batch_size)),
        alignment=None if links is None else batch_links(links),
    )


def batch_links(links: Sequence[np.ndarray | None]) -> torch.Tensor:
    """Per-example (source, target) links as one (L, 3) tensor of (row, target, source)."""
    rows = [
        np.column_stack([np.full(len(pairs), row), pairs[:, 1], pairs[:, 0]])
        for row, pairs in enumerate(links)
        if pairs is not None and len(pairs)
    ]
    if not rows:
        return torch.zeros((0, 3), dtype=torch.int64)
    return torch.from_numpy(np.concatenate(rows).astype(np.int64))  # (L, 3)


def make_batch(
    dataset: ParallelDataset, indices: Sequence[int], *, pad_id: int, bos_id: int, eos_id: int
) -> Batch:
    """The batch of ``dataset``'s examples at ``indices`` (what a batch sampler yields)."""
    return collate(
        [dataset[i] for i in indices], pad_id=pad_id, bos_id=bos_id, eos_id=eos_id, indices=indices
    )

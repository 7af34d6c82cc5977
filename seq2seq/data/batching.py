"""Token-budget batches of similar-length examples, reshuffled every epoch, resumable mid-epoch.

Examples are sorted by length (the longer side, then target, then source), with ties broken by a
random draw seeded by (seed, epoch), and cut greedily into batches whose cost
``n_sentences * max(S, T)`` stays within ``max_tokens``. Sorting by the longer side first matches
the cost, and halves the padding of a plain (target, source) sort on the Bible corpus (5% against
10% at max_tokens=8192). The sequence of lengths is the same in every epoch, so the batch
boundaries are too: only which equal-length examples share a batch, and the order of the
batches, change from epoch to epoch. That keeps ``len()`` fixed and makes an epoch's batches a
pure function of (seed, epoch), so an iterator restored from ``state_dict()`` continues exactly
where the saved one stopped.

With several weighted corpora (mixing.py) an epoch is a composition of the corpus that changes from
epoch to epoch: the sampler then sorts and cuts each epoch's composition afresh (still a pure function
of (seed, epoch)) and yields its virtual indices, which the batch maker resolves. An upsampled pair
(weight 3: three copies) would otherwise sort next to its own copies, which have its lengths, and fill
a batch with repeats: a third of every batch, for the parallel data of a back-translation mix. So the
composition is split into rounds, as many as the most copies of one pair; the copies of a pair go to
different rounds and every other example to a random one, each round is sorted and cut on its own, and
the batches of all rounds are shuffled together. No batch holds a pair twice.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


class TokenBatchSampler:
    """Yields lists of dataset indices; see the module docstring for how batches are formed.

    A single example whose cost exceeds ``max_tokens`` forms a batch of its own rather than being
    dropped or raising: filtering over-long examples is the corpus filter's job. With
    ``world_size > 1`` each rank gets every ``world_size``-th batch; when the batches do not
    divide evenly, the first ones are repeated so every rank runs the same number of steps.
    """

    def __init__(
        self,
        src_lengths: np.ndarray,
        tgt_lengths: np.ndarray,
        max_tokens: int,
        seed: int,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        joint_sequence: bool = False,
        composition: Callable[[int, int], np.ndarray] | None = None,
    ) -> None:
        """`composition(seed, epoch)`: the epoch's virtual indices (v % n is the example), when the
        epochs of a weighted mix differ; None: every example once per epoch.

        `joint_sequence`: a pair is one sequence, source then target (a decoder-only model), so a
        batch costs n * (S + T) tokens instead of n * max(S, T). Pairs are sorted as for the
        encoder-decoder, by the longer side: that wastes less padding than sorting by S + T (a batch
        of equal sums still mixes short sources with long targets, and S and T are padded apart)."""
        # Any integer type: int32 lengths stay int32 (4 bytes a pair), the batch costs are computed in int64.
        self.src_lengths = np.asarray(src_lengths)
        self.tgt_lengths = np.asarray(tgt_lengths)
        if self.src_lengths.dtype.kind not in "iu" and self.src_lengths.size:
            raise ValueError(f"lengths must be integers, got {self.src_lengths.dtype}")
        if self.src_lengths.shape != self.tgt_lengths.shape or self.src_lengths.ndim != 1:
            raise ValueError(f"length arrays differ: {self.src_lengths.shape} vs {self.tgt_lengths.shape}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        self.max_tokens, self.seed, self.shuffle = int(max_tokens), int(seed), bool(shuffle)
        self.rank, self.world_size = int(rank), int(world_size)
        self.joint_sequence = bool(joint_sequence)
        self.composition = composition
        self.epoch = 0
        self.position = 0  # batches of the current epoch already handed out by this rank
        self._packed: tuple[int, np.ndarray, list[int]] | None = None  # (epoch, order, cuts), the last packed
        self._cuts = self._packing(0)[1]  # without a composition, every epoch has these cut points
        oversized = int(self._sizes().max(initial=0))
        if oversized > self.max_tokens:
            log.warning(
                "some examples (up to %d tokens) exceed max_tokens=%d; each forms its own batch",
                oversized,
                self.max_tokens,
            )

    @property
    def n_batches_total(self) -> int:
        """Batches of the current epoch over all ranks (before evening them out across ranks)."""
        cuts = self._cuts if self.composition is None else self._packing(self.epoch)[1]
        return len(cuts) - 1

    def _packing(self, epoch: int) -> tuple[np.ndarray, list[int]]:
        """The epoch's order and batch cut points (packed once per epoch of a composition)."""
        if self.composition is None and self._packed is not None:
            return self._order_and_rounds(epoch)[0], self._packed[2]
        if self._packed is None or self._packed[0] != epoch:
            order, round_starts = self._order_and_rounds(epoch)
            examples = order % len(self.src_lengths) if len(self.src_lengths) else order
            cuts = _pack(
                examples, self.src_lengths, self.tgt_lengths, self.max_tokens,
                joint=self.joint_sequence, starts=round_starts,
            )  # fmt: skip
            self._packed = (epoch, order, cuts)
        return self._packed[1], self._packed[2]

    def __len__(self) -> int:
        """Batches per epoch on this rank."""
        return (self.n_batches_total + self.world_size - 1) // self.world_size

    def batches(self, epoch: int) -> list[list[int]]:
        """All batches this rank gets in ``epoch``, in order, as lists (for inspection and small sets)."""
        return [batch.tolist() for batch in self._epoch_batches(epoch)]

    def __iter__(self) -> Iterator[list[int]]:
        """The rest of the current epoch from the saved position; afterwards the epoch advances."""
        epoch_batches = self._epoch_batches(self.epoch)
        for batch in itertools.islice(epoch_batches, self.position, None):
            self.position += 1
            yield batch.tolist()
        self.epoch, self.position = self.epoch + 1, 0

    def _epoch_batches(self, epoch: int) -> Iterator[np.ndarray]:
        """This rank's batches of ``epoch`` as index arrays, made one at a time from the epoch's order.

        Nothing per example is held beyond the order itself (8 bytes a pair), however large the corpus.
        """
        order, cuts = self._packing(epoch)
        total = len(cuts) - 1
        if total == 0:
            return
        batch_ids = np.arange(total)
        if self.shuffle:
            batch_ids = np.random.default_rng([self.seed, epoch, 1]).permutation(total)
        steps = (total + self.world_size - 1) // self.world_size  # every rank runs as many
        for k in range(self.rank, steps * self.world_size, self.world_size):
            chosen = int(batch_ids[k % total])
            yield order[cuts[chosen] : cuts[chosen + 1]]

    def set_epoch(self, epoch: int) -> None:
        """Move to ``epoch``; setting the current epoch again keeps the position (so resume works)."""
        if epoch != self.epoch:
            self.epoch, self.position = int(epoch), 0

    def state_dict(self) -> dict[str, Any]:
        state = {
            "epoch": self.epoch,
            "position": self.position,
            "n_examples": len(self.src_lengths),
            "n_batches": self.n_batches_total,
            "seed": self.seed,
            "world_size": self.world_size,
        }
        if self.composition is not None:
            # how a composition's epochs are packed: a state saved by a sampler that packed them otherwise
            # (before rounds) must not resume mid-epoch, since its batches differ
            state["packing"] = "rounds"
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore epoch and position; if the data or batch settings changed, restart that epoch."""
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        keys = ("n_examples", "n_batches", "seed", "world_size", "packing")
        saved = tuple(state.get(key) for key in keys)
        current = tuple(self.state_dict().get(key) for key in keys)
        if saved != current:
            log.warning(
                "batch sampler state was saved for (examples, batches, seed, ranks, packing)=%s, not %s; "
                "restarting epoch %d from its first batch",
                saved,
                current,
                self.epoch,
            )
            self.position = 0

    def _sizes(self) -> np.ndarray:
        """One pair's tokens as batched: the longer side, or both sides with `joint_sequence`."""
        if self.joint_sequence:
            return self.src_lengths.astype(np.int64) + self.tgt_lengths
        return np.maximum(self.src_lengths, self.tgt_lengths)

    def _order_and_rounds(self, epoch: int) -> tuple[np.ndarray, list[int]]:
        """Indices sorted by (longer side, target, source length); ties broken at random when shuffling;
        and the positions in that order where a round begins (a batch never spans two).

        With a composition: the epoch's virtual indices, sorted by round, then by their examples' lengths
        (module docstring)."""
        chosen = None if self.composition is None else self.composition(self.seed, epoch)
        src, tgt = self.src_lengths, self.tgt_lengths
        rounds = np.zeros(0, dtype=np.int64)
        if chosen is not None and len(src):
            src, tgt = src[chosen % len(src)], tgt[chosen % len(src)]
            rounds = _rounds(chosen, len(self.src_lengths), self.seed, epoch)
        if self.shuffle:
            ties = np.random.default_rng([self.seed, epoch, 0]).random(len(src))
        else:
            ties = np.arange(len(src))
        if len(rounds) and rounds.any():
            order = np.lexsort((ties, src, tgt, np.maximum(src, tgt), rounds))
            sorted_rounds = rounds[order]
            starts = (np.flatnonzero(sorted_rounds[1:] != sorted_rounds[:-1]) + 1).tolist()
        else:
            order, starts = np.lexsort((ties, src, tgt, np.maximum(src, tgt))), []
        return (order if chosen is None else chosen[order]), starts


def _rounds(chosen: np.ndarray, n_examples: int, seed: int, epoch: int) -> np.ndarray:
    """The round of each of an epoch's virtual indices (v = copy * n + i): copy c of pair i goes to
    round (c + offset_i) mod R, R being the most copies of one pair and offset_i a random draw per pair,
    so a pair's copies are in different rounds and single examples spread evenly over them."""
    copies = chosen // n_examples
    count = int(copies.max(initial=0)) + 1
    if count == 1:
        return np.zeros(len(chosen), dtype=np.int64)
    offsets = np.random.default_rng([seed, epoch, 3]).integers(count, size=n_examples)
    return (copies + offsets[chosen % n_examples]) % count


def _pack(
    order: np.ndarray,
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    max_tokens: int,
    *,
    joint: bool = False,
    starts: list[int] | None = None,
) -> list[int]:
    """Greedy cut points (into ``order``) so each batch's n * max(S, T) (``joint``: n * (S + T)) stays
    within max_tokens, S and T being the batch's longest source and target; a batch also begins at each
    position in ``starts``."""
    sources, targets = src_lengths[order].tolist(), tgt_lengths[order].tolist()
    forced = set(starts or ())
    cuts = [0]
    size = widest_src = widest_tgt = 0
    for k, (src, tgt) in enumerate(zip(sources, targets)):
        wider_src, wider_tgt = max(widest_src, src), max(widest_tgt, tgt)
        width = wider_src + wider_tgt if joint else max(wider_src, wider_tgt)
        if size and ((size + 1) * width > max_tokens or k in forced):
            cuts.append(k)
            size, wider_src, wider_tgt = 0, src, tgt
        size, widest_src, widest_tgt = size + 1, wider_src, wider_tgt
    if size:
        cuts.append(len(sources))
    return cuts


def padding_waste(batches: list[list[int]], src_lengths: np.ndarray, tgt_lengths: np.ndarray) -> float:
    """Fraction of the batch tensors (source plus target) that is padding."""
    real = padded = 0
    for batch in batches:
        src, tgt = src_lengths[batch], tgt_lengths[batch]
        real += int(src.sum() + tgt.sum())
        padded += len(batch) * int(src.max() + tgt.max())
    return 1.0 - real / padded if padded else 0.0

"""Source-side noise for training (Lample et al. 2018; Edunov et al. 2018 for back-translation): words
dropped, masked, or moved a few places, applied to a source as a batch is made.

Noise works on words, not pieces: a word is a piece that starts one (sentencepiece's "▁") followed by
the pieces that continue it, so a dropped or masked word goes whole. A masked word becomes one mask
piece (the tokenizer's unk). The local shuffle moves each word at most `shuffle_distance` places: word
i is sorted by i + u, u uniform in [0, shuffle_distance + 1). The random draws come from a generator the
caller seeds from (seed, epoch, example), which makes the noise a pure function of the data order and
identical after a resume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seq2seq.errors import UserError


@dataclass(frozen=True)
class NoiseSettings:
    """A corpus's `noise` settings (all zero: no noise)."""

    drop: float = 0.0  # probability that a word is dropped (a source keeps at least one word)
    mask: float = 0.0  # probability that a kept word becomes one mask piece (unk)
    shuffle_distance: float = 0.0  # the farthest a word moves in the local shuffle (0: no shuffle)

    def __post_init__(self) -> None:
        for name in ("drop", "mask"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise UserError(f"noise.{name}={value} must be in [0, 1); it is the probability per word")
        if self.shuffle_distance < 0:
            raise UserError(f"noise.shuffle_distance={self.shuffle_distance} must be 0 or more (words)")

    @property
    def active(self) -> bool:
        return bool(self.drop or self.mask or self.shuffle_distance)


class SourceNoise:
    """Noise for one corpus's sources: ``noise(src_ids, rng)`` -> noised ids, still ending in eos."""

    def __init__(self, settings: NoiseSettings, *, word_start: np.ndarray, mask_id: int) -> None:
        """`word_start`: (V,) bool, True for the pieces that begin a word (specials included)."""
        self.settings, self.word_start, self.mask_id = settings, np.asarray(word_start, dtype=bool), mask_id

    def __call__(self, ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        tokens, eos = np.asarray(ids[:-1]), ids[-1:]  # (L,), (1,)
        if len(tokens) == 0:
            return np.asarray(ids)
        starts = self.word_start[tokens]
        starts[0] = True
        bounds = np.append(np.flatnonzero(starts), len(tokens))  # word w = tokens[bounds[w]:bounds[w + 1]]
        words = len(bounds) - 1
        draws = rng.random((3, words))  # one draw per word for drop, mask and shuffle
        keep = draws[0] >= self.settings.drop
        if not keep.any():
            keep[int(rng.integers(words))] = True
        masked = draws[1] < self.settings.mask
        order = np.arange(words, dtype=np.float64)
        if self.settings.shuffle_distance:
            order += draws[2] * (self.settings.shuffle_distance + 1)
        pieces = []
        for word in np.argsort(order, kind="stable"):
            if not keep[word]:
                continue
            if masked[word]:
                pieces.append(np.array([self.mask_id], dtype=tokens.dtype))
            else:
                pieces.append(tokens[bounds[word] : bounds[word + 1]])
        return np.concatenate([*pieces, eos]).astype(np.asarray(ids).dtype, copy=False)


def word_starts(pieces: list[str]) -> np.ndarray:
    """(V,) bool: which pieces of a sentencepiece vocabulary begin a word (specials count as words)."""
    return np.array(
        [piece.startswith("▁") or (piece.startswith("<") and piece.endswith(">")) for piece in pieces]
    )

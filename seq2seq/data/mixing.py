"""Several training corpora in one run, each with a weight, an optional source tag and optional source noise.

The corpora stay separate mapped datasets (one cached encoding each); a `MixedCorpus` puts them end to
end, so pair i of the mix is pair i - start of the corpus whose range holds it. An epoch is a
composition of the mix that depends only on (seed, epoch): corpus c contributes round(weight_c * n_c)
examples, every pair floor(weight_c) times plus a fresh draw without replacement for the fraction
(weight 0.5: a different half of the corpus every epoch; weight 3: every pair three times).

Indices handed to the batch sampler are *virtual*: v = copy * N + i for the copy-th occurrence of pair
i in the epoch (N pairs in all), so two copies of one pair stay apart, and source noise, keyed on
(seed, epoch, v), gives them different noise. The per-pair cost is the lengths (4 bytes a side) plus 8
bytes of composition per example while an epoch is drawn; the tokens stay on disk.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.noise import NoiseSettings, SourceNoise
from seq2seq.errors import UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusSpec:
    """One training corpus of `data.train` (a mapping, or one entry of a list)."""

    src: str  # source file (plain or .gz)
    tgt: str  # target file, line-aligned with `src`
    weight: float = 1.0  # expected times each pair is seen per epoch (0.5: half, 2: twice)
    tag: str | None = None  # a token put before every source of this corpus (e.g. <bt>), or None
    noise: NoiseSettings | None = None  # source-side noise while training, or None
    name: str = ""  # shown in logs; defaults to the source file's name
    src_lang: str | None = None  # a multilingual run's source language: its token starts every source
    tgt_lang: str | None = None  # ... and target language: its token starts every target

    @property
    def label(self) -> str:
        return self.name or str(self.src)

    @property
    def pair(self) -> tuple[str, str]:
        return self.src, self.tgt


class MixedCorpus:
    """The training corpora end to end: lengths for batching, examples for collating (tag and noise added).

    ``src_lengths`` already count the tag; noise only ever shortens a source, so they bound the batch.
    """

    def __init__(
        self,
        parts: Sequence[ParallelDataset],
        *,
        weights: Sequence[float],
        tag_ids: Sequence[int | None],
        noises: Sequence[SourceNoise | None],
        names: Sequence[str],
        tgt_tag_ids: Sequence[int | None] | None = None,
    ) -> None:
        if not parts or not len(parts) == len(weights) == len(tag_ids) == len(noises) == len(names):
            raise ValueError("one weight, tag, noise and name per corpus")
        self.parts, self.weights = list(parts), [float(w) for w in weights]
        self.tag_ids, self.noises, self.names = list(tag_ids), list(noises), list(names)
        # a token put before every target of a corpus (a multilingual run's target language), or None
        self.tgt_tag_ids = list(tgt_tag_ids) if tgt_tag_ids is not None else [None] * len(parts)
        if len(self.tgt_tag_ids) != len(parts):
            raise ValueError("one target tag per corpus")
        sizes = np.array([len(part) for part in parts], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])  # (C + 1,) first index of each corpus
        self.src_lengths = np.concatenate(
            [part.src_lengths + (tag is not None) for part, tag in zip(parts, tag_ids)]
        ).astype(np.int32)
        self.tgt_lengths = np.concatenate(
            [part.tgt_lengths + (tag is not None) for part, tag in zip(parts, self.tgt_tag_ids)]
        ).astype(np.int32)
        self._check_composition(sizes.tolist())

    def _check_composition(self, sizes: list[int]) -> None:
        """An epoch of no examples is an error (training would end at once with 0 updates); a corpus whose
        positive weight rounds to no example is never trained on, which is said."""
        drawn = [round(weight * size) for weight, size in zip(self.weights, sizes)]
        described = ", ".join(
            f"{name}: weight {weight:g} x {size} pairs"
            for name, weight, size in zip(self.names, self.weights, sizes)
        )
        if not sum(drawn):
            raise UserError(
                f"the training corpora give an epoch of no pairs ({described}: each rounds to 0); "
                "raise a corpus's data.train weight"
            )
        for name, weight, size, count in zip(self.names, self.weights, sizes, drawn):
            if weight > 0 and count == 0:
                log.warning("corpus %s: weight %g x %d pairs rounds to no pair per epoch: it is never "
                            "trained on; raise its weight or drop it", name, weight, size)  # fmt: skip

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def n_tokens(self) -> int:
        return int(self.src_lengths.sum(dtype=np.int64) + self.tgt_lengths.sum(dtype=np.int64))

    @property
    def uniform(self) -> bool:
        """Every weight is 1: each epoch is every pair once, and virtual indices are the pairs' own."""
        return all(weight == 1.0 for weight in self.weights)

    def corpus_of(self, index: int) -> int:
        """Which corpus pair ``index`` (not virtual) belongs to."""
        return int(np.searchsorted(self.starts, index, side="right") - 1)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Pair ``index`` with its corpus's tag, without noise (what validation or inspection wants)."""
        return self.example(index)

    def example(
        self, virtual: int, *, seed: int = 0, epoch: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pair a virtual index names, as training sees it in ``epoch`` (noise only when one is given)."""
        index = int(virtual) % len(self)
        corpus = self.corpus_of(index)
        src, tgt = self.parts[corpus][index - int(self.starts[corpus])]
        noise = self.noises[corpus]
        if noise is not None and epoch is not None:
            src = noise(src, np.random.default_rng([seed, epoch, int(virtual), 7]))
        tag, tgt_tag = self.tag_ids[corpus], self.tgt_tag_ids[corpus]
        if tag is not None:
            src = np.concatenate([np.array([tag], dtype=src.dtype), src])
        if tgt_tag is not None:
            tgt = np.concatenate([np.array([tgt_tag], dtype=tgt.dtype), tgt])
        return src, tgt

    @property
    def has_links(self) -> bool:
        """Whether some corpus carries token links (guided alignment)."""
        return any(part.links is not None for part in self.parts)

    def example_links(self, virtual: int) -> np.ndarray | None:
        """The (source, target) token links of the pair a virtual index names, as `example` gives it (tags
        shift their side), or None: its corpus has no links, or noise (which moves source tokens)."""
        index = int(virtual) % len(self)
        corpus = self.corpus_of(index)
        if self.noises[corpus] is not None:
            return None
        links = self.parts[corpus].links_of(index - int(self.starts[corpus]))
        shift = [int(self.tag_ids[corpus] is not None), int(self.tgt_tag_ids[corpus] is not None)]
        if links is None or not any(shift):
            return links
        return links + np.array(shift, dtype=links.dtype)

    def epoch_indices(self, seed: int, epoch: int) -> np.ndarray:
        """The virtual indices of one epoch's composition (int64, grouped by corpus; the sampler sorts)."""
        total, chosen = len(self), []
        for corpus, weight in enumerate(self.weights):
            start, size = int(self.starts[corpus]), len(self.parts[corpus])
            whole, fraction = divmod(round(weight * size), size)
            for copy in range(whole):
                chosen.append(np.arange(start, start + size, dtype=np.int64) + copy * total)
            if fraction:
                rng = np.random.default_rng([seed, epoch, 2, corpus])
                drawn = np.sort(rng.choice(size, size=fraction, replace=False))
                chosen.append(drawn.astype(np.int64) + start + whole * total)
        return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)

    def counts(self, virtual: np.ndarray) -> list[int]:
        """Examples per corpus among ``virtual`` indices (what an epoch drew from each)."""
        corpora = np.searchsorted(self.starts, np.asarray(virtual) % len(self), side="right") - 1
        return np.bincount(corpora, minlength=len(self.parts)).tolist()


def temperature_weights(sizes: Sequence[int], temperature: float) -> list[float]:
    """Per corpus, the weight that gives it the share n_c^(1/T) / sum_k n_k^(1/T) of an epoch of as many
    examples as the corpora hold together (T-sampling, as multilingual NMT samples its language pairs:
    T = 1 keeps each corpus's own share, a larger T moves the shares towards equal, T -> inf is uniform).
    Empty corpora get weight 0."""
    if not temperature > 0:
        raise UserError(f"data.temperature={temperature} must be above 0 (1: proportional; 5: flatter)")
    total = sum(sizes)
    powered = [size ** (1.0 / temperature) if size else 0.0 for size in sizes]
    return [total * p / sum(powered) / size if size else 0.0 for p, size in zip(powered, sizes)]


def noise_for(settings: NoiseSettings | None, *, word_start: np.ndarray, mask_id: int) -> SourceNoise | None:
    """The corpus's noise function, or None when it has no noise (or every probability is zero)."""
    if settings is None or not settings.active:
        return None
    return SourceNoise(settings, word_start=word_start, mask_id=mask_id)

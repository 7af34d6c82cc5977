"""From corpus files to what training needs: tokenizers, filtered encoded datasets, dev texts.

Everything slow is done once, by seq2seq-prepare or by the first training run: the sentencepiece
model is reused from the run directory (resume) or from the cache (vocabulary.py), and the encoded
corpus is mapped from the binarized cache (binarize.py). A second run on the same data starts in a
few seconds, and its memory does not grow with the corpus: filtering keeps an index of rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.data.binarize import encoded_corpus, encoded_directory
from seq2seq.data.corpus import CorpusStats, FilterReport, read_parallel
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.mixing import CorpusSpec, MixedCorpus, noise_for, temperature_weights
from seq2seq.data.noise import word_starts
from seq2seq.data.piece_links import VERSION as LINKS_VERSION
from seq2seq.data.piece_links import corpus_links
from seq2seq.data.tokenizer import language_token
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.data.vocabulary import (
    DEFAULT_TOKENIZER,
    GivenTokenizers,
    TokenizerSettings,
    save_given_tokenizers,
    tokenizers_for,
)
from seq2seq.errors import UserError

log = logging.getLogger(__name__)


@dataclass
class TrainingData:
    """Tokenizers (one object when joint), filtered datasets, and the dev sentences for BLEU."""

    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    train: MixedCorpus  # every training corpus, with weights, tags and noise
    dev: ParallelDataset | MixedCorpus  # a MixedCorpus (its dev sets end to end) when languages are named
    dev_src_texts: list[str]  # normalised source of each dev pair, in dataset order
    dev_ref_texts: list[str]  # normalised reference of each dev pair, in dataset order
    tokenizer_paths: list[Path]  # the sentencepiece model file(s) saved in out_dir (or the cache)
    stats: dict[str, dict[str, int]] = field(default_factory=dict)  # per split: pairs, words, ...
    # a multilingual run's dev directions (src, tgt), one per dev set of `dev` in order; [] for one pair
    dev_directions: list[tuple[str, str]] = field(default_factory=list)

    @property
    def dev_direction_ranges(self) -> list[tuple[str, range]]:
        """("en-es", the dev indices of that direction) per dev direction; [] in a run of one pair."""
        if not self.dev_directions or not isinstance(self.dev, MixedCorpus):
            return []
        starts = self.dev.starts.tolist()
        return [(f"{src}-{tgt}", range(starts[i], starts[i + 1]))
                for i, (src, tgt) in enumerate(self.dev_directions)]  # fmt: skip

    @property
    def joint(self) -> bool:
        return self.src_tokenizer is self.tgt_tokenizer

    # The ids and sizes (ints) that batches and models are built with, read from the tokenizer that owns
    # them: bos_id, the decoder's start token, is the target tokenizer's (ours: bos; Marian's: pad;
    # NLLB's: eos).
    pad_id = property(attrgetter("src_tokenizer.pad_id"))
    bos_id = property(attrgetter("tgt_tokenizer.bos_id"))
    eos_id = property(attrgetter("tgt_tokenizer.eos_id"))
    src_vocab_size = property(attrgetter("src_tokenizer.vocab_size"))
    tgt_vocab_size = property(attrgetter("tgt_tokenizer.vocab_size"))

    @property
    def tokenizer_payload(self) -> dict[str, bytes | None]:
        """What a checkpoint stores: the model bytes; ``tgt`` is None when the tokenizer is joint."""
        return {
            "src": self.src_tokenizer.to_bytes(),
            "tgt": None if self.joint else self.tgt_tokenizer.to_bytes(),
        }


@dataclass(frozen=True)
class FilterSettings:
    """Which training pairs are dropped (the `data.filter` config group; dev pairs: empty or too long)."""

    max_tokens_per_side: int = 256
    max_token_ratio: float = 3.0  # longer side / shorter side, counted in tokens
    min_tokens_for_ratio: int = 5  # the ratio is only checked once the longer side has this many tokens


def prepare_training_data(
    *,
    train_src: str | Path | None = None,
    train_tgt: str | Path | None = None,
    corpora: Sequence[CorpusSpec] = (),
    transforms: Sequence[Any] = (),
    transform_dev: bool = False,
    dev_src: str | Path | None = None,
    dev_tgt: str | Path | None = None,
    dev_corpora: Sequence[CorpusSpec] = (),
    out_dir: str | Path | None,
    tokenizer: TokenizerSettings = DEFAULT_TOKENIZER,
    given_tokenizers: GivenTokenizers | None = None,
    filters: FilterSettings = FilterSettings(),
    encoding_errors: str = "strict",
    cache_dir: str | Path | None = None,
    num_threads: int = 1,
    workers: int | None = None,
    progress: bool = True,
    alignment: bool = False,
    temperature: float | None = None,
) -> TrainingData:
    """Tokenizer(s) (also saved in ``out_dir`` when given), the filtered training set and the dev set.

    The tokenizer is trained on at most ``tokenizer.sample_sentences`` sentences drawn uniformly from the
    training text (vocabulary.py); the encoded corpora come from the cache, built there by ``workers``
    processes (default: all cores) on a miss. Training pairs are dropped when a side is empty, longer
    than ``filters.max_tokens_per_side`` tokens, or ``max_token_ratio`` times longer than the other side
    (checked once the longer side has ``min_tokens_for_ratio`` tokens: short pairs have noisy ratios).
    Dev pairs are only dropped when empty or too long. Counts are logged per reason.

    ``corpora`` (instead of ``train_src``/``train_tgt``): several training corpora with weights, tags and
    noise (mixing.py). ``transforms``: cleaning transforms run over every training corpus first (and over
    the dev set with ``transform_dev``); the cleaned copies live in the cache (data/cleaning.py).
    ``given_tokenizers`` (a fine-tuning run's, from its checkpoint) are used as they are instead of
    ``tokenizer``'s: nothing is trained; they are saved in ``out_dir`` all the same.
    ``alignment``: every training corpus without noise gets its token links (guided alignment), aligned
    by eflomal into the cache on a miss (data/piece_links.py).
    ``temperature``: the corpora's shares of an epoch follow their filtered sizes to the power 1/T
    (mixing.temperature_weights) instead of their weights, which must then be left at 1.
    A multilingual run (corpora with ``src_lang`` / ``tgt_lang``): the tokenizer gets a token per
    language (``__es__``: tokenizer.language_token), which starts each source and each target of its
    language. ``dev_corpora`` (instead of ``dev_src``/``dev_tgt``): the dev set(s); in a multilingual run
    one per direction, with their languages, whose pairs start with those tokens too (one dev set after
    the other in ``dev``; TrainingData.dev_direction_ranges).
    """
    if alignment and cache_dir is None:
        raise UserError("data.alignment needs data.cache_dir: the word links are written there")
    specs = list(corpora) or [CorpusSpec(src=str(train_src), tgt=str(train_tgt))]
    dev_specs = list(dev_corpora) or [CorpusSpec(src=str(dev_src), tgt=str(dev_tgt), name="dev")]
    _require_prepared(*(path for spec in specs + dev_specs for path in (spec.src, spec.tgt)))
    if transforms:
        specs = [_cleaned(spec, transforms, cache_dir, encoding_errors, progress) for spec in specs]
        if transform_dev:
            dev_specs = [_cleaned(s, transforms, cache_dir, encoding_errors, progress) for s in dev_specs]
    out = None if out_dir is None else Path(out_dir)
    if given_tokenizers is not None:
        src_tok, tgt_tok = given_tokenizers.src, given_tokenizers.tgt
        paths = save_given_tokenizers(given_tokenizers, out=out)
    else:
        src_tok, tgt_tok, paths = tokenizers_for(
            specs[0].src, specs[0].tgt, out=out, settings=tokenizer, encoding_errors=encoding_errors,
            cache_dir=cache_dir, num_threads=num_threads, more_pairs=[spec.pair for spec in specs[1:]],
            user_symbols=[spec.tag for spec in specs if spec.tag] + _language_tokens(specs + dev_specs),
        )  # fmt: skip
    split = partial(
        _encoded_split, tokenizers=(src_tok, tgt_tok), encoding_errors=encoding_errors, cache_dir=cache_dir,
        progress=progress, workers=workers,
    )  # fmt: skip
    parts = [split(s.src, s.tgt, filters=filters, align=alignment and _alignable(s)) for s in specs]
    if temperature is not None:
        specs = _tempered(specs, [len(part[0]) for part in parts], temperature)
    train = _mixed(specs, [part[0] for part in parts], src_tok)
    dev_filters = replace(filters, max_token_ratio=None)  # dev pairs: only empty or too long ones go
    dev_parts = [split(spec.src, spec.tgt, filters=dev_filters) for spec in dev_specs]
    directions = [(spec.src_lang, spec.tgt_lang) for spec in dev_specs if spec.src_lang and spec.tgt_lang]
    dev: ParallelDataset | MixedCorpus = dev_parts[0][0]
    if directions:
        dev = _mixed(dev_specs, [part[0] for part in dev_parts], src_tok, role="dev set")
    dev_src_texts, dev_ref_texts = [], []
    for spec, (_, keep, _) in zip(dev_specs, dev_parts):
        src_texts, ref_texts = read_parallel(spec.src, spec.tgt, encoding_errors=encoding_errors)
        dev_src_texts += [src_texts[i] for i in keep]
        dev_ref_texts += [ref_texts[i] for i in keep]
    return TrainingData(
        src_tokenizer=src_tok, tgt_tokenizer=tgt_tok, train=train, dev=dev,
        dev_src_texts=dev_src_texts, dev_ref_texts=dev_ref_texts, tokenizer_paths=paths,
        stats={**_train_stats(specs, [part[2] for part in parts]),
               **_split_stats("dev", dev_specs, [part[2] for part in dev_parts])},
        dev_directions=directions,
    )  # fmt: skip


def _tempered(specs: list[CorpusSpec], sizes: list[int], temperature: float) -> list[CorpusSpec]:
    """The corpora with the weights of T-sampling (mixing.temperature_weights) over their sizes."""
    weighted = [spec.label for spec in specs if spec.weight != 1.0]
    if weighted:
        raise UserError(f"data.temperature={temperature} sets every corpus's share itself, but {weighted[0]} "
                        "has a weight; drop the weights or data.temperature")  # fmt: skip
    weights = temperature_weights(sizes, temperature)
    total = sum(sizes)
    for spec, size, weight in zip(specs, sizes, weights):
        log.info("data.temperature=%g: corpus %s, %d pairs (%.1f%% of all), %.1f%% of each epoch",
                 temperature, spec.label, size, 100 * size / total, 100 * weight * size / total)  # fmt: skip
    return [replace(spec, weight=weight) for spec, weight in zip(specs, weights)]


def _alignable(spec: CorpusSpec) -> bool:
    """Whether a corpus can carry token links: noise moves its source tokens away from them."""
    if spec.noise is not None and spec.noise.active:
        log.info("data.alignment: %s has source noise, so its pairs train without word links", spec.label)
        return False
    return True


def _mixed(
    specs: list[CorpusSpec],
    datasets: list[ParallelDataset],
    tokenizer: TextTokenizer,
    *,
    role: str = "training corpus",
) -> MixedCorpus:
    """The corpora as one MixedCorpus: tags as piece ids (whole pieces: the tokenizer was trained so)."""
    starts = word_starts(tokenizer.pieces_of_vocabulary()) if any(s.noise for s in specs) else None
    tags = [language_token(spec.src_lang) if spec.src_lang else spec.tag for spec in specs]
    tgt_tags = [language_token(spec.tgt_lang) if spec.tgt_lang else None for spec in specs]
    tag_ids = [None if tag is None else tokenizer.piece_to_id(tag) for tag in tags]
    tgt_tag_ids = [None if tag is None else tokenizer.piece_to_id(tag) for tag in tgt_tags]
    for spec, tag, tag_id in [*zip(specs, tags, tag_ids), *zip(specs, tgt_tags, tgt_tag_ids)]:
        if tag is not None and tag_id == tokenizer.unk_id:
            raise UserError(f"tag {tag!r} of {spec.label} is not a piece of the tokenizer; "
                            "retrain it (a new run) with this tag in data.train")  # fmt: skip
    for spec, dataset in zip(specs, datasets):
        if spec.weight != 1.0 or spec.tag or spec.noise or spec.tgt_lang or len(specs) > 1:
            direction = f", {spec.src_lang}->{spec.tgt_lang}" if spec.tgt_lang else ""
            log.info("%s %s: %d pairs%s, weight %g, tag %s, noise %s", role, spec.label,
                     len(dataset), direction, spec.weight, spec.tag, spec.noise)  # fmt: skip
    noises = [
        None if starts is None else noise_for(spec.noise, word_start=starts, mask_id=tokenizer.unk_id)
        for spec in specs
    ]
    return MixedCorpus(datasets, weights=[s.weight for s in specs], tag_ids=tag_ids, noises=noises,
                       names=[spec.label for spec in specs], tgt_tag_ids=tgt_tag_ids)  # fmt: skip


def _language_tokens(specs: list[CorpusSpec]) -> list[str]:
    """The language tokens of a multilingual run, sorted: one per language of a training or dev corpus."""
    codes = {code for spec in specs for code in (spec.src_lang, spec.tgt_lang) if code}
    return [language_token(code) for code in sorted(codes)]


def _train_stats(specs: list[CorpusSpec], stats: list[CorpusStats]) -> dict[str, dict[str, int]]:
    """The training split's stats, all corpora together; with several, each one's too."""
    return _split_stats("train", specs, stats)


def _split_stats(split: str, specs: list[CorpusSpec], stats: list[CorpusStats]) -> dict[str, dict[str, int]]:
    """A split's stats, all its corpora together; with several, each one's too (``dev[en-es]``)."""
    total = CorpusStats()
    for part in stats:
        total.merge(part)
    if len(specs) == 1:
        return {split: total.as_dict()}
    labels = [spec.label for spec in specs]
    labels = [f"{label}#{i}" if labels.count(label) > 1 else label for i, label in enumerate(labels)]
    return {split: total.as_dict(), **{f"{split}[{label}]": p.as_dict() for label, p in zip(labels, stats)}}


def _cleaned(
    spec: CorpusSpec,
    transforms: Sequence[Any],
    cache_dir: str | Path | None,
    encoding_errors: str,
    progress: bool,
) -> CorpusSpec:
    """The corpus with its files replaced by their cleaned copies (built in the cache on a miss)."""
    from seq2seq.data.cleaning import clean_corpus

    if cache_dir is None:
        raise UserError("data.transforms needs data.cache_dir: the cleaned corpus is written there")
    cleaned = clean_corpus(Path(spec.src), Path(spec.tgt), transforms, cache_dir=Path(cache_dir),
                           encoding_errors=encoding_errors, progress=progress)  # fmt: skip
    return replace(spec, src=str(cleaned.src), tgt=str(cleaned.tgt), name=spec.label)


def _encoded_split(
    src: str | Path,
    tgt: str | Path,
    *,
    tokenizers: tuple[TextTokenizer, TextTokenizer],
    encoding_errors: str,
    cache_dir: str | Path | None,
    progress: bool,
    workers: int | None,
    filters: FilterSettings,
    align: bool = False,
) -> tuple[ParallelDataset, np.ndarray, CorpusStats]:
    """One split's filtered dataset (sharing the mapped arrays), the line indices it kept, its stats;
    `align`: with every pair's token links (built beside the encoded arrays in the cache on a miss)."""
    encoded, stats = encoded_corpus(
        src, tgt, src_tokenizer=tokenizers[0], tgt_tokenizer=tokenizers[1], encoding_errors=encoding_errors,
        cache_dir=cache_dir, progress=progress, workers=workers,
    )  # fmt: skip
    if align and cache_dir is not None:
        directory = encoded_directory(Path(src), Path(tgt), tokenizers, encoding_errors, Path(cache_dir))
        links = corpus_links(encoded, directory.with_name(f"{directory.name}.links-v{LINKS_VERSION}"),
                             tokenizers=tokenizers, progress=progress)  # fmt: skip
        encoded = encoded.with_links(links)
    keep, report = length_filter(
        encoded.src_lengths - 1, encoded.tgt_lengths - 1, max_tokens_per_side=filters.max_tokens_per_side,
        max_token_ratio=filters.max_token_ratio, min_tokens_for_ratio=filters.min_tokens_for_ratio,
    )  # fmt: skip
    report.log(f"{src}, {tgt}")
    if not len(keep):
        raise UserError(
            f"no pairs of {src} and {tgt} are left after filtering; check the files and data.filter"
        )
    return encoded.subset(keep), keep, stats


def length_filter(
    src_tokens: np.ndarray,
    tgt_tokens: np.ndarray,
    *,
    max_tokens_per_side: int | None,
    max_token_ratio: float | None,
    min_tokens_for_ratio: int = 5,
) -> tuple[np.ndarray, FilterReport]:
    """Indices of the pairs to keep, given token counts without specials, and why the rest went."""
    src, tgt = np.asarray(src_tokens), np.asarray(tgt_tokens)
    reasons = [("empty", (src == 0) | (tgt == 0))]
    if max_tokens_per_side is not None:
        reasons.append(
            (f"longer than {max_tokens_per_side} tokens", np.maximum(src, tgt) > max_tokens_per_side)
        )
    if max_token_ratio is not None:
        longer, shorter = np.maximum(src, tgt), np.maximum(np.minimum(src, tgt), 1)
        skewed = (longer >= min_tokens_for_ratio) & (longer > max_token_ratio * shorter)
        reasons.append((f"token ratio above {max_token_ratio:g}", skewed))
    report = FilterReport()
    dropped = np.zeros(len(src), dtype=bool)
    for reason, mask in reasons:  # each pair is counted under the first reason that applies
        fresh = mask & ~dropped
        if fresh.any():
            report.removed[reason] = int(fresh.sum())
        dropped |= mask
    keep = np.flatnonzero(~dropped)
    report.kept = len(keep)
    return keep, report


def _require_prepared(*paths: str | Path) -> None:
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise UserError(
            f"corpus file {missing[0]} does not exist; run `seq2seq-prepare data=<the same data config>` "
            "first, or point data.train/data.dev at existing files"
        )

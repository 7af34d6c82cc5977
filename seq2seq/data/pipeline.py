"""From corpus files to what training needs: tokenizers, filtered encoded datasets, dev texts.

Everything slow is done once: the sentencepiece model is reused from the run directory (resume)
or from the cache (a new run on the same data and settings), and the encoded corpus comes from
the binarized cache (binarize.py). A second run on the same data starts in a few seconds.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from seq2seq.data.binarize import cache_key, encoded_corpus, file_digest
from seq2seq.data.corpus import FilterReport, read_lines, read_parallel
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import UserError

log = logging.getLogger(__name__)

TOKENIZER_RECORD = "tokenizer.json"


@dataclass
class TrainingData:
    """Tokenizers (one object when joint), filtered datasets, and the dev sentences for BLEU."""

    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    train: ParallelDataset
    dev: ParallelDataset
    dev_src_texts: list[str]  # normalised source of each dev pair, in dataset order
    dev_ref_texts: list[str]  # normalised reference of each dev pair, in dataset order
    tokenizer_paths: list[Path]  # the sentencepiece model file(s) saved in out_dir

    @property
    def joint(self) -> bool:
        return self.src_tokenizer is self.tgt_tokenizer

    @property
    def pad_id(self) -> int:
        return self.src_tokenizer.pad_id

    @property
    def bos_id(self) -> int:
        return self.src_tokenizer.bos_id

    @property
    def eos_id(self) -> int:
        return self.src_tokenizer.eos_id

    @property
    def src_vocab_size(self) -> int:
        return self.src_tokenizer.vocab_size

    @property
    def tgt_vocab_size(self) -> int:
        return self.tgt_tokenizer.vocab_size

    @property
    def tokenizer_payload(self) -> dict[str, bytes | None]:
        """What a checkpoint stores: the model bytes; ``tgt`` is None when the tokenizer is joint."""
        return {
            "src": self.src_tokenizer.to_bytes(),
            "tgt": None if self.joint else self.tgt_tokenizer.to_bytes(),
        }


def prepare_training_data(
    *,
    train_src: str | Path,
    train_tgt: str | Path,
    dev_src: str | Path,
    dev_tgt: str | Path,
    out_dir: str | Path,
    vocab_size: int = 8000,
    model_type: str = "unigram",
    joint: bool = True,
    character_coverage: float = 1.0,
    max_tokens_per_side: int = 256,
    max_length_ratio: float = 3.0,
    min_tokens_for_ratio: int = 5,
    encoding_errors: str = "strict",
    cache_dir: str | Path | None = None,
    num_threads: int = 1,
    seed: int = 0,
    progress: bool = True,
) -> TrainingData:
    """Tokenizer(s) in ``out_dir``, the filtered training set, and the dev set.

    Training pairs are dropped when a side is empty, longer than ``max_tokens_per_side`` tokens,
    or ``max_length_ratio`` times longer than the other side (checked once the longer side has
    ``min_tokens_for_ratio`` tokens: short pairs have noisy ratios). Dev pairs are only dropped
    when empty or too long. Counts are logged per reason.
    """
    _require_prepared(train_src, train_tgt, dev_src, dev_tgt)
    options = {"vocab_size": vocab_size, "model_type": model_type, "joint": joint}
    options.update({"character_coverage": character_coverage, "seed": seed})
    src_tok, tgt_tok, paths = _tokenizers(
        train_src, train_tgt, out=Path(out_dir), options=options, encoding_errors=encoding_errors,
        cache_dir=cache_dir, num_threads=num_threads,
    )  # fmt: skip
    split = partial(
        _encoded_split, tokenizers=(src_tok, tgt_tok), encoding_errors=encoding_errors, cache_dir=cache_dir,
        progress=progress, max_tokens_per_side=max_tokens_per_side, min_tokens_for_ratio=min_tokens_for_ratio,
    )  # fmt: skip
    train, _ = split(train_src, train_tgt, max_length_ratio=max_length_ratio)
    dev, dev_keep = split(dev_src, dev_tgt, max_length_ratio=None)
    dev_src_texts, dev_ref_texts = read_parallel(dev_src, dev_tgt, encoding_errors=encoding_errors)
    return TrainingData(
        src_tokenizer=src_tok, tgt_tokenizer=tgt_tok, train=train, dev=dev,
        dev_src_texts=[dev_src_texts[i] for i in dev_keep],
        dev_ref_texts=[dev_ref_texts[i] for i in dev_keep], tokenizer_paths=paths,
    )  # fmt: skip


def _encoded_split(
    src: str | Path,
    tgt: str | Path,
    *,
    tokenizers: tuple[Tokenizer, Tokenizer],
    encoding_errors: str,
    cache_dir: str | Path | None,
    progress: bool,
    max_tokens_per_side: int,
    max_length_ratio: float | None,
    min_tokens_for_ratio: int,
) -> tuple[ParallelDataset, np.ndarray]:
    """The filtered dataset of one split, and the line numbers it kept."""
    encoded = encoded_corpus(
        src, tgt, src_tokenizer=tokenizers[0], tgt_tokenizer=tokenizers[1], encoding_errors=encoding_errors,
        cache_dir=cache_dir, progress=progress,
    )  # fmt: skip
    keep, report = length_filter(
        encoded.src_lengths - 1, encoded.tgt_lengths - 1, max_tokens_per_side=max_tokens_per_side,
        max_length_ratio=max_length_ratio, min_tokens_for_ratio=min_tokens_for_ratio,
    )  # fmt: skip
    report.log(f"{src}, {tgt}")
    if not len(keep):
        raise UserError(
            f"no pairs of {src} and {tgt} are left after filtering; check the files and data.filter"
        )
    return encoded.subset(keep), keep


def read_texts(path: str | Path, *, encoding_errors: str = "strict") -> list[str]:
    """Normalised lines of a file to translate (the same normalisation as the training data)."""
    return read_lines(path, encoding_errors=encoding_errors)


def length_filter(
    src_tokens: np.ndarray,
    tgt_tokens: np.ndarray,
    *,
    max_tokens_per_side: int | None,
    max_length_ratio: float | None,
    min_tokens_for_ratio: int = 5,
) -> tuple[np.ndarray, FilterReport]:
    """Indices of the pairs to keep, given token counts without specials, and why the rest went."""
    src, tgt = np.asarray(src_tokens), np.asarray(tgt_tokens)
    reasons = [("empty", (src == 0) | (tgt == 0))]
    if max_tokens_per_side is not None:
        reasons.append(
            (f"longer than {max_tokens_per_side} tokens", np.maximum(src, tgt) > max_tokens_per_side)
        )
    if max_length_ratio is not None:
        longer, shorter = np.maximum(src, tgt), np.maximum(np.minimum(src, tgt), 1)
        skewed = (longer >= min_tokens_for_ratio) & (longer > max_length_ratio * shorter)
        reasons.append((f"length ratio above {max_length_ratio:g}", skewed))
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


def _tokenizers(
    train_src: str | Path,
    train_tgt: str | Path,
    *,
    out: Path,
    options: dict,
    encoding_errors: str,
    cache_dir: str | Path | None,
    num_threads: int,
) -> tuple[Tokenizer, Tokenizer, list[Path]]:
    """Load the run's tokenizer(s) if it has them (resume); else take them from the cache or train them."""
    names = ["spm.model"] if options["joint"] else ["spm.src.model", "spm.tgt.model"]
    paths = [out / name for name in names]
    record = out / TOKENIZER_RECORD
    if all(p.is_file() for p in paths):
        saved = json.loads(record.read_text(encoding="utf-8")).get("options") if record.is_file() else options
        if saved != options:
            raise UserError(
                f"{out} holds a tokenizer trained with {saved}, not {options}; "
                "use a new run directory or the original tokenizer settings"
            )
        log.info("tokenizer: reusing %s", ", ".join(map(str, paths)))
        return _loaded(paths)
    digests = [file_digest(train_src), file_digest(train_tgt)]
    key = cache_key(
        json.dumps(options, sort_keys=True),
        encoding_errors,
        *(sorted(digests) if options["joint"] else digests),
    )
    cached = [Path(cache_dir) / f"{Path(name).stem}.{key}.model" for name in names] if cache_dir else []
    if cached and all(p.is_file() for p in cached):
        log.info("tokenizer: cache hit %s", ", ".join(map(str, cached)))
        models = [Tokenizer.from_file(p) for p in cached]
    else:
        models = _train_tokenizers(train_src, train_tgt, options, digests, encoding_errors, num_threads)
        for model, path in zip(models, cached):
            model.save(path)
    for model, path in zip(models, paths):
        model.save(path)
    temporary = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    trained_on = {"options": options, "train": [str(train_src), str(train_tgt)], "sha256": digests}
    temporary.write_text(json.dumps(trained_on, indent=2), encoding="utf-8")
    temporary.replace(record)
    return _loaded(paths)


def _train_tokenizers(
    train_src: str | Path,
    train_tgt: str | Path,
    options: dict,
    digests: Sequence[str],
    encoding_errors: str,
    num_threads: int,
) -> list[Tokenizer]:
    src, tgt = read_parallel(train_src, train_tgt, encoding_errors=encoding_errors)
    settings = {
        "vocab_size": options["vocab_size"],
        "model_type": options["model_type"],
        "character_coverage": options["character_coverage"],
        "seed": options["seed"],
        "num_threads": num_threads,
    }
    if options["joint"]:
        # The same text in the same order for en->es and es->en, so both directions get one model.
        texts = src + tgt if digests[0] <= digests[1] else tgt + src
        log.info(
            "tokenizer: training a joint %s model of %d pieces on %d sentences",
            options["model_type"],
            options["vocab_size"],
            len(texts),
        )
        return [Tokenizer.train(texts, **settings)]
    log.info(
        "tokenizer: training separate %s models of %d pieces", options["model_type"], options["vocab_size"]
    )
    return [Tokenizer.train(src, **settings), Tokenizer.train(tgt, **settings)]


def _loaded(paths: list[Path]) -> tuple[Tokenizer, Tokenizer, list[Path]]:
    tokenizers = [Tokenizer.from_file(p) for p in paths]
    return tokenizers[0], tokenizers[-1], paths

"""From the `data` config group to everything the training loop consumes (tokenizers, batches, dev set)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from omegaconf import DictConfig

from seq2seq.cli.config.data_config import prepared_corpus
from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.collate import Batch, make_batch
from seq2seq.data.collate import collate as collate_examples
from seq2seq.data.pipeline import TrainingData
from seq2seq.data.vocabulary import GivenTokenizers
from seq2seq.train import distributed


@dataclass
class RunData:
    """The prepared corpus plus what the loop needs to draw batches from it."""

    corpus: TrainingData  # tokenizers, datasets, dev texts
    train_batches: TokenBatchSampler
    make_batch: Callable[[list[int]], Batch]
    make_dev_batch: Callable[[list[int]], Batch]
    dev_batches: list[list[int]]


def load_data(
    data_cfg: DictConfig, *, run_dir: Path, max_tokens: int, seed: int, joint_sequence: bool = False,
    given_tokenizers: GivenTokenizers | None = None,
) -> RunData:  # fmt: skip
    """Tokenizers trained (or reloaded) in the run dir, or `given_tokenizers` (a fine-tuning run's, from
    its checkpoint), mapped encodings, and token-budget batches (`joint_sequence`: a decoder-only
    model's, source and target counted together).

    Under torchrun rank 0 prepares first (building the caches on a miss) while the others wait; then
    every rank maps the same cached files, so the page cache holds one copy of the corpus.
    """
    main = distributed.is_main()
    if not main:
        distributed.barrier()  # rank 0 is preparing
    data = prepared_corpus(data_cfg, out_dir=run_dir, progress=sys.stderr.isatty() and main,
                           given_tokenizers=given_tokenizers)  # fmt: skip
    if main:
        distributed.barrier()
    collate = partial(make_batch, pad_id=data.pad_id, bos_id=data.bos_id, eos_id=data.eos_id)
    train = data.train
    train_batches = TokenBatchSampler(
        train.src_lengths,
        train.tgt_lengths,
        max_tokens,
        seed=seed,
        rank=distributed.rank(),
        world_size=distributed.world_size(),
        joint_sequence=joint_sequence,
        composition=None if train.uniform else train.epoch_indices,
    )

    def make_train_batch(indices: list[int]) -> Batch:
        """Called as the sampler hands out the batch, so its epoch is the batch's (noise keys on it)."""
        examples = [train.example(v, seed=seed, epoch=train_batches.epoch) for v in indices]
        links = [train.example_links(v) for v in indices] if train.has_links else None
        return collate_examples(examples, pad_id=data.pad_id, bos_id=data.bos_id, eos_id=data.eos_id,
                                indices=indices, links=links)  # fmt: skip

    dev_sampler = TokenBatchSampler(
        data.dev.src_lengths, data.dev.tgt_lengths, max_tokens, seed=seed, shuffle=False,
        joint_sequence=joint_sequence,
    )  # fmt: skip
    return RunData(
        corpus=data,
        train_batches=train_batches,
        make_batch=make_train_batch,
        make_dev_batch=lambda indices: collate(data.dev, indices),
        dev_batches=dev_sampler.batches(0),
    )

"""The `data` config group -> arguments of seq2seq.data.pipeline.prepare_training_data (the one adapter).

Kept free of torch: seq2seq-prepare's encoding workers import the command's module again, and a
worker that only tokenizes should not carry PyTorch's memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from seq2seq.data.pipeline import FilterSettings, TrainingData, prepare_training_data
from seq2seq.data.vocabulary import TokenizerSettings


def _path(value: Any) -> Path:
    return Path(to_absolute_path(str(value)))


def prepared_corpus(data_cfg: DictConfig, *, out_dir: Path | None, progress: bool) -> TrainingData:
    """`prepare_training_data` with the arguments a `data` config group gives (the one adapter)."""
    return prepare_training_data(
        train_src=_path(data_cfg.train.src),
        train_tgt=_path(data_cfg.train.tgt),
        dev_src=_path(data_cfg.dev.src),
        dev_tgt=_path(data_cfg.dev.tgt),
        out_dir=out_dir,
        cache_dir=_path(data_cfg.cache_dir),
        encoding_errors=str(data_cfg.encoding_errors),
        workers=data_cfg.get("workers"),
        progress=progress,
        tokenizer=TokenizerSettings(**OmegaConf.to_container(data_cfg.tokenizer, resolve=True)),
        filters=FilterSettings(**OmegaConf.to_container(data_cfg.filter, resolve=True)),
    )

"""Typed schemas for the scalar settings, so a bad value fails when Hydra composes the config.

Registered in Hydra's ConfigStore as `schema/model` and `schema/trainer`; the YAML files of
those groups list them first in their defaults, which gives `trainer.max_updates=abc` or an
unknown key Hydra's own one-line error before anything runs.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from seq2seq.model.builders import RUN_TIME_ARGUMENTS, build_model


def _model_schema() -> type:
    """Types of the `model` group's keys, without values (those live in configs/model/base.yaml only).

    The keys and types are build_model's keyword arguments, read from its signature, so the schema
    cannot drift from the builder; the arguments the train CLI injects at run time are left out.
    """
    hints = typing.get_type_hints(build_model)
    fields = [("_target_", str, MISSING)] + [
        (name, hints[name], MISSING)
        for name in inspect.signature(build_model).parameters
        if name not in RUN_TIME_ARGUMENTS
    ]
    return dataclasses.make_dataclass("ModelSchema", fields)


ModelSchema = _model_schema()


@dataclass
class TrainerSchema:
    """Types of the `trainer` group's keys; their values live in configs/trainer/default.yaml only."""

    max_updates: int = MISSING
    max_epochs: int = MISSING
    max_minutes: float | None = MISSING
    max_tokens: int = MISSING
    update_freq: int = MISSING
    clip_norm: float | None = MISSING
    precision: str = MISSING
    device: str = MISSING
    num_threads: int | None = MISSING
    validate_every: int | None = MISSING
    validate_every_minutes: float | None = MISSING
    validate_bleu: bool = MISSING
    validate_max_sentences: int | None = MISSING
    early_stop_patience: int | None = MISSING
    save_every: int | None = MISSING
    keep_last: int = MISSING
    average_last: int | None = MISSING
    average_fraction: float | None = MISSING
    snapshot_every: int = MISSING
    max_snapshots: int = MISSING
    tune_decoding: bool = MISSING
    tune_decoding_sentences: int | None = MISSING
    log_every: int = MISSING
    resume: str = MISSING
    max_consecutive_nonfinite: int = MISSING
    sample_translations: int = MISSING
    attention_plot: bool = MISSING
    progress_bar: str = MISSING


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(group="schema", name="model", node=ModelSchema)
    store.store(group="schema", name="trainer", node=TrainerSchema)

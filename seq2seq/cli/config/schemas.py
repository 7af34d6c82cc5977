"""Typed schemas for the scalar settings, so a bad value fails when Hydra composes the config.

Registered in Hydra's ConfigStore as `schema/model`, `schema/decoder_only_model`, `schema/encoder_only_model`
and `schema/trainer`;
the YAML files of those groups list them first in their defaults, which gives `trainer.max_updates=abc` or an
unknown key Hydra's own one-line error before anything runs. Both are derived from the code that reads
the keys (the builders' signatures; the dataclasses of the trainer's parts), never written twice.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from seq2seq.model.builders import RUN_TIME_ARGUMENTS, build_decoder_only, build_encoder_only, build_model
from seq2seq.train.finish import FinishSettings
from seq2seq.train.loop import TrainerOptions


def _model_schema(builder: Callable[..., Any], name: str) -> type:
    """Types of a `model` group entry's keys, without values (those live in configs/model/*.yaml only).

    The keys and types are the builder's keyword arguments, read from its signature, so the schema
    cannot drift from the builder; the arguments the train CLI injects at run time are left out.
    """
    hints = typing.get_type_hints(builder)
    fields = [("_target_", str, MISSING)] + [
        (name, hints[name], MISSING)
        for name in inspect.signature(builder).parameters
        if name not in RUN_TIME_ARGUMENTS
    ]
    return dataclasses.make_dataclass(name, fields)


ModelSchema = _model_schema(build_model, "ModelSchema")  # encoder-decoder: configs/model/base.yaml
DecoderOnlySchema = _model_schema(build_decoder_only, "DecoderOnlySchema")  # configs/model/decoder_only.yaml
EncoderOnlySchema = _model_schema(build_encoder_only, "EncoderOnlySchema")  # configs/model/encoder_only.yaml


@dataclass(frozen=True)
class CommandSettings:
    """The `trainer` keys seq2seq-train reads itself, typed; values in configs/trainer/default.yaml only.

    The loop's keys are TrainerOptions' fields and the end of a run's FinishSettings' (both with
    defaults for library users); these have no defaults because only the command builds them.
    """

    max_tokens: int
    device: str
    num_threads: int | None
    resume: str
    progress_bar: str
    validate_bleu: bool
    validate_max_sentences: int | None
    sample_translations: int
    attention_plot: bool

    @classmethod
    def from_config(cls, trainer: Mapping[str, Any]) -> CommandSettings:
        return cls(**{field.name: trainer[field.name] for field in dataclasses.fields(cls)})


TRAINER_PARTS = (TrainerOptions, FinishSettings, CommandSettings)  # together: every `trainer` key, once


def _trainer_schema() -> type:
    """Types of the `trainer` group's keys, without values: the fields of TRAINER_PARTS, so the schema
    cannot drift from the dataclasses that read the keys."""
    fields = []
    for part in TRAINER_PARTS:
        hints = typing.get_type_hints(part)
        fields += [(field.name, hints[field.name], MISSING) for field in dataclasses.fields(part)]
    return dataclasses.make_dataclass("TrainerSchema", fields)


TrainerSchema = _trainer_schema()


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(group="schema", name="model", node=ModelSchema)
    store.store(group="schema", name="decoder_only_model", node=DecoderOnlySchema)
    store.store(group="schema", name="encoder_only_model", node=EncoderOnlySchema)
    store.store(group="schema", name="trainer", node=TrainerSchema)

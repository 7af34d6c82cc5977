"""One source for every default: the Python API agrees with the YAML the CLI composes.

A library user building a Trainer, a SearchOptions, a Translator, an optimizer, a schedule, a loss or a
server gets the behaviour a CLI user gets from configs/trainer/default.yaml, configs/decode/*.yaml,
configs/translate.yaml, configs/{optim,schedule,loss}/*.yaml and configs/serve.yaml.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_method
from omegaconf import MISSING, OmegaConf

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.schemas import TRAINER_PARTS, TrainerSchema, register_schemas
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.inference.translator import Translator
from seq2seq.train.finish import FinishSettings
from seq2seq.train.loop import TrainerOptions
from seq2seq.train.objective import TrainingLoss
from seq2seq.train.snapshots import SnapshotPolicy

register_schemas()


def composed(config: str, *overrides: str) -> dict:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return OmegaConf.to_container(compose(config, overrides=list(overrides)))


def test_trainer_options_defaults_equal_the_trainer_yaml() -> None:
    trainer = composed("train", "model=tiny")["trainer"]
    for field in dataclasses.fields(TrainerOptions):
        assert field.default == trainer[field.name], f"TrainerOptions.{field.name} differs from the YAML"


def test_end_of_run_defaults_equal_the_trainer_yaml() -> None:
    trainer = composed("train", "model=tiny")["trainer"]
    for field in dataclasses.fields(FinishSettings):
        assert field.default == trainer[field.name], f"FinishSettings.{field.name} differs from the YAML"
    policy = {"fraction": "average_fraction", "every": "snapshot_every", "max_count": "max_snapshots"}
    for field in dataclasses.fields(SnapshotPolicy):
        if field.name != "fraction":  # null in the YAML: no averaging by fraction unless it is set
            assert field.default == trainer[policy[field.name]], f"SnapshotPolicy.{field.name} differs"


def test_schemas_declare_types_only() -> None:
    for field in dataclasses.fields(TrainerSchema):
        assert field.default is MISSING, f"TrainerSchema.{field.name} has a default of its own"


def test_the_trainer_schema_types_every_yaml_key_from_the_code_that_reads_it() -> None:
    yaml_keys = set(OmegaConf.load(Path(config_dir()) / "trainer" / "default.yaml")) - {"defaults"}
    parts = [{field.name for field in dataclasses.fields(part)} for part in TRAINER_PARTS]
    assert sum(map(len, parts)) == len(set().union(*parts)), "a trainer key is read by two dataclasses"
    assert {field.name for field in dataclasses.fields(TrainerSchema)} == set().union(*parts) == yaml_keys


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def assert_defaults_equal(target: Any, config: dict[str, Any], where: str) -> None:
    """Every keyword default of `target` (a function or a class) that `config` also sets is the config's
    value; every config key is one of target's arguments (interpolations are left out: run-time values)."""
    parameters = inspect.signature(target).parameters
    for key, value in config.items():
        assert key in parameters, f"{where}: {key} is not an argument of {target.__qualname__}"
        default = parameters[key].default
        if default is not inspect.Parameter.empty and not str(value).startswith("${"):
            assert plain(default) == value, (
                f"{where}: {target.__qualname__}'s {key}={default!r}, YAML {value!r}"
            )


@pytest.mark.parametrize(
    "path", sorted(str(p.relative_to(config_dir())) for g in ("optim", "schedule", "loss")
                   for p in (Path(config_dir()) / g).glob("*.yaml")),
)  # fmt: skip
def test_target_defaults_equal_their_yaml(path: str) -> None:
    """configs/optim/adamw.yaml and build_adamw, configs/schedule/cosine.yaml and cosine (min_lr), ..."""
    config = OmegaConf.to_container(OmegaConf.load(Path(config_dir()) / path))
    target = get_method(config.pop("_target_"))
    config.pop("_partial_", None)
    if path.startswith(
        "loss"
    ):  # the objective's own setting, next to the token loss's (build_loss splits them)
        objective = {key: config.pop(key) for key in ("source_weight", "alignment_weight")}
        assert_defaults_equal(TrainingLoss, objective, path)
    assert_defaults_equal(target, config, path)


def test_server_defaults_equal_serve_yaml() -> None:
    """Limits, BatchingTranslator and create_app, as a library user builds a server, and seq2seq-serve."""
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
    from seq2seq.cli.serve import FLOATS, INTEGERS, LIMITS
    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.requests import Limits

    serve = composed("serve", "checkpoint=x.pt")
    assert dataclasses.asdict(Limits()) == {key: serve[key] for key in LIMITS}
    for target in (BatchingTranslator, create_app):
        keys = set(inspect.signature(target).parameters) & {*INTEGERS, *FLOATS}
        assert keys, target
        assert_defaults_equal(target, {key: serve[key] for key in keys}, "serve.yaml")


def test_search_options_defaults_equal_greedy_yaml_and_beam_is_a_diff() -> None:
    greedy = composed("translate", "decode=greedy", "checkpoint=x.pt")["decode"]
    assert SearchOptions() == SearchOptions.from_config(greedy)
    assert set(greedy) == {field.name for field in dataclasses.fields(SearchOptions)}
    beam = composed("translate", "checkpoint=x.pt")["decode"]  # translate's default group
    assert SearchOptions.from_config(beam) == DEFAULT_OPTIONS == SearchOptions(beam_size=5)
    assert inspect.signature(greedy_search).parameters["options"].default == SearchOptions()


def test_translator_defaults_equal_translate_yaml() -> None:
    translate = composed("translate", "checkpoint=x.pt")
    init = inspect.signature(Translator.__init__).parameters
    loader = inspect.signature(Translator.from_checkpoint).parameters
    for name in ("long_lines", "max_input_tokens"):
        assert init[name].default == loader[name].default == translate[name], name
    for name in ("precision", "engine"):
        assert loader[name].default == translate[name], name
    assert inspect.signature(Translator.translate).parameters["max_tokens"].default == translate["max_tokens"]


@pytest.mark.parametrize("name", ["beam_size", "nbest", "length_penalty", "max_len_a", "max_len_b"])
def test_translate_arguments_defer_to_the_options(name: str) -> None:
    """translate()'s search arguments default to None: the Translator's options decide."""
    assert inspect.signature(Translator.translate).parameters[name].default is None


@pytest.mark.parametrize("data", ["bible_en_es", "parallel_files"])
def test_tokenizer_and_filter_settings_equal_the_data_yaml(data: str) -> None:
    from seq2seq.data.pipeline import FilterSettings
    from seq2seq.data.vocabulary import TokenizerSettings

    composed_data = composed("train", f"data={data}", "model=tiny")["data"]
    tokenizer = {
        key: value for key, value in dataclasses.asdict(TokenizerSettings()).items() if key != "seed"
    }
    assert tokenizer == composed_data["tokenizer"]
    assert dataclasses.asdict(FilterSettings()) == composed_data["filter"]

"""configs/model/encoder_only.yaml is the one home of the encoder-only family's defaults: build_encoder_only
agrees with it key for key, its schema declares types only, encoder_only_tiny is a diff on top of it, and
its stack has the shape of the default translation model's encoder, so that init_from= can start from it."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from omegaconf import MISSING, OmegaConf

from seq2seq.cli.config.schemas import EncoderOnlySchema
from seq2seq.model import build_encoder_only, model_config
from seq2seq.model.builders import RUN_TIME_ARGUMENTS
from seq2seq.model.sizes import model_config_dir


def encoder_only_yaml() -> dict[str, Any]:
    values = OmegaConf.to_container(OmegaConf.load(model_config_dir() / "encoder_only.yaml"))
    values.pop("defaults")
    return values


def test_build_encoder_only_defaults_equal_the_yaml_for_every_key() -> None:
    yaml = encoder_only_yaml()
    assert yaml.pop("_target_") == "seq2seq.model.build_encoder_only"
    parameters = inspect.signature(build_encoder_only).parameters
    assert set(yaml) == set(parameters) - set(RUN_TIME_ARGUMENTS)
    for key, value in yaml.items():
        default = parameters[key].default
        assert default == value and type(default) is type(value), f"build_encoder_only({key}=...)"


def test_schema_declares_types_only_for_exactly_the_yaml_keys() -> None:
    fields = dataclasses.fields(EncoderOnlySchema)
    assert all(field.default is MISSING for field in fields)
    assert {field.name for field in fields} == set(encoder_only_yaml())


def test_tiny_is_a_diff_on_top_of_encoder_only() -> None:
    own = OmegaConf.to_container(OmegaConf.load(model_config_dir() / "encoder_only_tiny.yaml"))
    assert own.pop("defaults") == ["encoder_only", "_self_"]
    base = encoder_only_yaml()
    assert own and set(own) <= set(base)
    assert not [key for key, value in own.items() if base[key] == value]


def test_the_default_has_the_shape_of_the_small_models_encoder() -> None:
    small, qe = model_config("small"), encoder_only_yaml()
    assert {
        key: qe[key] for key in ("d_model", "n_heads", "ffn_dim", "norm", "activation", "positional")
    } == {key: small[key] for key in ("d_model", "n_heads", "ffn_dim", "norm", "activation", "positional")}
    assert qe["layers"] == small["encoder_layers"]

"""One source for every model default: configs/model/base.yaml.

build_model (the Python API) and the building blocks' keyword defaults agree with it, the schema
declares types only, the other sizes are diffs on top of it, and `model_config` reads the same
values Hydra composes.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import MISSING, OmegaConf

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.schemas import ModelSchema, register_schemas
from seq2seq.model import build_model, model_config, model_size, size_names
from seq2seq.model.builders import RUN_TIME_ARGUMENTS
from seq2seq.model.sizes import SIZE_KEYS, model_config_dir
from seq2seq.model.transformer import PositionScheme
from seq2seq.nn.attention import CrossAttention, SelfAttention
from seq2seq.nn.backends import attend, local_attend
from seq2seq.nn.embeddings import OutputProjection, TokenEmbedding
from seq2seq.nn.layers import FeedForward, MemoryDownsampler
from seq2seq.nn.positional import LearnedPositions, SinusoidalPositions

register_schemas()


def base_yaml() -> dict[str, Any]:
    values = OmegaConf.to_container(OmegaConf.load(model_config_dir() / "base.yaml"))
    values.pop("defaults")
    return values


def keyword_defaults(function: Any) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def test_build_model_defaults_equal_base_yaml_for_every_key() -> None:
    yaml = base_yaml()
    assert yaml.pop("_target_") == "seq2seq.model.build_model"
    parameters = set(inspect.signature(build_model).parameters)
    assert set(yaml) == parameters - set(RUN_TIME_ARGUMENTS), "base.yaml and build_model's arguments differ"
    defaults = keyword_defaults(build_model)
    for key, value in yaml.items():
        assert defaults[key] == value and type(defaults[key]) is type(value), f"build_model({key}=...)"


def test_model_schema_declares_types_only_for_exactly_the_yaml_keys() -> None:
    fields = dataclasses.fields(ModelSchema)
    for field in fields:
        assert field.default is MISSING, f"ModelSchema.{field.name} has a default of its own"
    assert {field.name for field in fields} == set(base_yaml())


# (function, its keyword) -> the model setting whose default it must share.
BLOCK_DEFAULTS = [
    (SelfAttention, "attention_backend", "attention_backend"),
    (SelfAttention, "dropout", "attention_dropout"),
    (SelfAttention, "window", "window"),
    (CrossAttention, "attention_backend", "attention_backend"),
    (CrossAttention, "dropout", "attention_dropout"),
    (FeedForward, "activation", "activation"),
    (TokenEmbedding, "scale", "scale_embeddings"),
    (OutputProjection, "bias", "output_bias"),
    (SinusoidalPositions, "layout", "sinusoid_layout"),
    (SinusoidalPositions, "offset", "position_offset"),
    (LearnedPositions, "offset", "position_offset"),
    (PositionScheme, "sinusoid_layout", "sinusoid_layout"),
    (PositionScheme, "offset", "position_offset"),
    (FeedForward, "dropout", "activation_dropout"),
    (MemoryDownsampler, "mode", "downsample_mode"),
    (attend, "attention_backend", "attention_backend"),
    (attend, "window", "window"),
    (local_attend, "attention_backend", "attention_backend"),
]


@pytest.mark.parametrize(
    ("function", "keyword", "setting"), BLOCK_DEFAULTS, ids=lambda x: getattr(x, "__name__", x)
)
def test_building_block_defaults_agree_with_base_yaml(function: Any, keyword: str, setting: str) -> None:
    assert keyword_defaults(function)[keyword] == base_yaml()[setting]


ENCODER_DECODER_SIZES = ["base", "big", "small", "tiny"]
# Encoder-decoder configurations for a purpose (an export format), diffs on base that may restate its values.
PURPOSES = ["marian", "student"]


def test_sizes_are_diffs_on_top_of_base() -> None:
    base = base_yaml()
    others = ["decoder_only", "decoder_only_tiny", "encoder_only", "encoder_only_tiny"]
    assert size_names() == sorted(ENCODER_DECODER_SIZES + PURPOSES + others)
    for name in ENCODER_DECODER_SIZES:
        if name == "base":
            continue
        own = OmegaConf.to_container(OmegaConf.load(model_config_dir() / f"{name}.yaml"))
        assert own.pop("defaults") == ["base", "_self_"], name
        assert own, f"{name}.yaml changes nothing"
        restated = sorted(key for key, value in own.items() if base.get(key) == value)
        assert not restated, f"{name}.yaml restates base.yaml's {restated}"
        assert set(own) <= set(base), f"{name}.yaml sets keys base.yaml does not declare"


def test_marian_is_small_with_what_a_marianmt_model_needs() -> None:
    own = OmegaConf.to_container(OmegaConf.load(model_config_dir() / "marian.yaml"))
    assert own.pop("defaults") == ["base", "_self_"]
    assert set(own) <= set(base_yaml())
    marian = model_config("marian")
    assert model_size("marian") == {**model_size("small")}
    assert {key: marian[key] for key in ("norm", "activation", "output_bias", "scale_embeddings")} == {
        "norm": "post", "activation": "silu", "output_bias": True, "scale_embeddings": True,
    }  # fmt: skip
    assert marian["share_embeddings"] and marian["share_decoder_output"]
    assert (marian["positional"], marian["sinusoid_layout"], marian["position_offset"]) == (
        "sinusoidal",
        "standard",
        0,
    )
    model = build_model(src_vocab_size=50, tgt_vocab_size=50, **marian)
    assert model.output.bias is not None and model.output.weight is model.encoder.embedding.weight


def test_the_student_is_small_with_depth_moved_from_decoder_to_encoder() -> None:
    student, small = model_size("student"), model_size("small")
    assert (student["encoder_layers"], student["decoder_layers"]) == (6, 2)
    assert {k: v for k, v in student.items() if not k.endswith("_layers")} == {
        k: v for k, v in small.items() if not k.endswith("_layers")
    }
    assert model_config("student")["dropout"] == model_config("small")["dropout"]


@pytest.mark.parametrize("name", ["tiny", "small", "base", "big", *PURPOSES])
def test_model_config_reads_what_hydra_composes(name: str) -> None:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        composed = OmegaConf.to_container(compose("train", overrides=[f"model={name}"]).model)
    composed.pop("_target_")
    assert model_config(name) == composed
    assert model_size(name) == {key: composed[key] for key in SIZE_KEYS if key in composed}


def test_sizes_keep_base_values_they_do_not_set() -> None:
    assert (
        model_config("big")["dropout"] == 0.3 and model_config("small")["dropout"] == base_yaml()["dropout"]
    )
    assert model_config("tiny")["attention_backend"] == base_yaml()["attention_backend"]


def test_an_unknown_size_is_a_one_line_error() -> None:
    with pytest.raises(
        ValueError,
        match=r"model size 'huge' does not exist; choose one of base, big, decoder_only, decoder_only_tiny, "
        r"encoder_only, encoder_only_tiny, marian, small, student, tiny",
    ):
        model_size("huge")


@pytest.mark.parametrize(
    "override",
    [
        "model.d_model=abc",
        "model.window=wide",
        "model.share_embeddings=maybe",
        "model.no_such_key=1",
        "model.attention=sdpa",
    ],
)
def test_bad_or_unknown_model_keys_fail_at_compose_time(override: str) -> None:
    """The schema has no values, but its types and key set still check every override (old names included)."""
    with (
        initialize_config_dir(config_dir=config_dir(), version_base="1.3"),
        pytest.raises(ConfigCompositionException),
    ):
        compose("train", overrides=["model=tiny", override])

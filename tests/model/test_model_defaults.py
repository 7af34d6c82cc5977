"""One source for every model default: configs/model/base.yaml, and for each other family its own
configuration (decoder_only.yaml, encoder_only.yaml).

Each family's builder (the Python API) agrees with its configuration key for key, the building blocks'
keyword defaults agree with base.yaml, each schema declares types only, the other sizes are diffs on top
of their family's configuration, and `model_config` reads the same values Hydra composes. The
decoder-only family has about the parameters of the default encoder-decoder (`small`), which makes the
families benchmark a comparison at equal size; the encoder-only stack has the shape of the default
translation model's encoder, so that init_from= can start from it.
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
from seq2seq.cli.config.schemas import DecoderOnlySchema, EncoderOnlySchema, ModelSchema, register_schemas
from seq2seq.model import (
    build_decoder_only,
    build_encoder_only,
    build_model,
    count_parameters,
    model_config,
    model_size,
    size_names,
)
from seq2seq.model.builders import RUN_TIME_ARGUMENTS
from seq2seq.model.sizes import SIZE_KEYS, model_config_dir
from seq2seq.model.transformer import PositionScheme
from seq2seq.nn.attention import CrossAttention, SelfAttention
from seq2seq.nn.backends import attend, local_attend
from seq2seq.nn.embeddings import OutputProjection, TokenEmbedding
from seq2seq.nn.layers import FeedForward, MemoryDownsampler
from seq2seq.nn.positional import LearnedPositions, SinusoidalPositions

register_schemas()


# Each family's configuration (the one home of its defaults), its builder and its schema.
FAMILIES = [
    ("base", build_model, ModelSchema),
    ("decoder_only", build_decoder_only, DecoderOnlySchema),
    ("encoder_only", build_encoder_only, EncoderOnlySchema),
]


def family_yaml(name: str) -> dict[str, Any]:
    values = OmegaConf.to_container(OmegaConf.load(model_config_dir() / f"{name}.yaml"))
    values.pop("defaults")
    return values


def base_yaml() -> dict[str, Any]:
    return family_yaml("base")


def keyword_defaults(function: Any) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


@pytest.mark.parametrize(("name", "builder", "schema"), FAMILIES, ids=lambda x: getattr(x, "__name__", x))
def test_builder_defaults_equal_the_yaml_for_every_key(name: str, builder: Any, schema: Any) -> None:
    yaml = family_yaml(name)
    assert yaml.pop("_target_") == f"seq2seq.model.{builder.__name__}"
    parameters = set(inspect.signature(builder).parameters)
    assert set(yaml) == parameters - set(RUN_TIME_ARGUMENTS), (
        f"{name}.yaml and {builder.__name__}'s arguments differ"
    )
    defaults = keyword_defaults(builder)
    for key, value in yaml.items():
        assert defaults[key] == value and type(defaults[key]) is type(value), f"{builder.__name__}({key}=...)"


@pytest.mark.parametrize(("name", "builder", "schema"), FAMILIES, ids=lambda x: getattr(x, "__name__", x))
def test_schema_declares_types_only_for_exactly_the_yaml_keys(name: str, builder: Any, schema: Any) -> None:
    fields = dataclasses.fields(schema)
    for field in fields:
        assert field.default is MISSING, f"{schema.__name__}.{field.name} has a default of its own"
    assert {field.name for field in fields} == set(family_yaml(name))


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


def test_the_sizes_are_the_families_and_their_sizes() -> None:
    others = ["decoder_only", "decoder_only_tiny", "encoder_only", "encoder_only_tiny"]
    assert size_names() == sorted(ENCODER_DECODER_SIZES + PURPOSES + others)


@pytest.mark.parametrize(
    ("name", "family"),
    [*((name, "base") for name in ENCODER_DECODER_SIZES if name != "base"),
     ("decoder_only_tiny", "decoder_only"), ("encoder_only_tiny", "encoder_only")],
)  # fmt: skip
def test_sizes_are_diffs_on_top_of_their_family(name: str, family: str) -> None:
    base = family_yaml(family)
    own = OmegaConf.to_container(OmegaConf.load(model_config_dir() / f"{name}.yaml"))
    assert own.pop("defaults") == [family, "_self_"], name
    assert own, f"{name}.yaml changes nothing"
    restated = sorted(key for key, value in own.items() if base.get(key) == value)
    assert not restated, f"{name}.yaml restates {family}.yaml's {restated}"
    assert set(own) <= set(base), f"{name}.yaml sets keys {family}.yaml does not declare"


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


@pytest.mark.parametrize(
    "name", ["tiny", "small", "base", "big", *PURPOSES, "decoder_only", "decoder_only_tiny"]
)
def test_model_config_reads_what_hydra_composes(name: str) -> None:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        composed = OmegaConf.to_container(compose("train", overrides=[f"model={name}"]).model)
    composed.pop("_target_")
    assert model_config(name) == composed
    assert model_size(name) == {key: composed[key] for key in SIZE_KEYS if key in composed}


def test_decoder_only_has_the_parameters_of_the_default_encoder_decoder() -> None:
    assert model_size("decoder_only_tiny") == {"d_model": 64, "n_heads": 4, "ffn_dim": 256, "layers": 4}
    vocab = dict(src_vocab_size=8000, tgt_vocab_size=8000)
    encoder_decoder = count_parameters(build_model(**vocab, **model_config("small")))
    decoder_only = count_parameters(build_decoder_only(**vocab, **model_config("decoder_only")))
    assert abs(decoder_only - encoder_decoder) / encoder_decoder < 0.01


def test_the_encoder_only_default_has_the_shape_of_the_small_models_encoder() -> None:
    small, qe = model_config("small"), family_yaml("encoder_only")
    shape = ("d_model", "n_heads", "ffn_dim", "norm", "activation", "positional")
    assert {key: qe[key] for key in shape} == {key: small[key] for key in shape}
    assert qe["layers"] == small["encoder_layers"]


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

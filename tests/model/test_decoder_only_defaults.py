"""configs/model/decoder_only.yaml is the one home of the decoder-only family's defaults.

build_decoder_only agrees with it key for key, its schema declares types only, decoder_only_tiny is a
diff on top of it, and the family has about the parameters of the default encoder-decoder (`small`),
which is what makes the families benchmark a comparison at equal size.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import MISSING, OmegaConf

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.schemas import DecoderOnlySchema, register_schemas
from seq2seq.model import build_decoder_only, build_model, count_parameters, model_config, model_size
from seq2seq.model.builders import RUN_TIME_ARGUMENTS
from seq2seq.model.sizes import model_config_dir

register_schemas()


def decoder_only_yaml() -> dict[str, Any]:
    values = OmegaConf.to_container(OmegaConf.load(model_config_dir() / "decoder_only.yaml"))
    values.pop("defaults")
    return values


def test_build_decoder_only_defaults_equal_the_yaml_for_every_key() -> None:
    yaml = decoder_only_yaml()
    assert yaml.pop("_target_") == "seq2seq.model.build_decoder_only"
    parameters = set(inspect.signature(build_decoder_only).parameters)
    assert set(yaml) == parameters - set(RUN_TIME_ARGUMENTS)
    defaults = {name: p.default for name, p in inspect.signature(build_decoder_only).parameters.items()}
    for key, value in yaml.items():
        assert defaults[key] == value and type(defaults[key]) is type(value), f"build_decoder_only({key}=...)"


def test_schema_declares_types_only_for_exactly_the_yaml_keys() -> None:
    fields = dataclasses.fields(DecoderOnlySchema)
    assert all(field.default is MISSING for field in fields)
    assert {field.name for field in fields} == set(decoder_only_yaml())


def test_tiny_is_a_diff_on_top_of_decoder_only() -> None:
    own = OmegaConf.to_container(OmegaConf.load(model_config_dir() / "decoder_only_tiny.yaml"))
    assert own.pop("defaults") == ["decoder_only", "_self_"]
    base = decoder_only_yaml()
    assert own and set(own) <= set(base)
    assert not [key for key, value in own.items() if base[key] == value]


def test_model_config_reads_what_hydra_composes() -> None:
    for name in ("decoder_only", "decoder_only_tiny"):
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            composed = OmegaConf.to_container(compose("train", overrides=[f"model={name}"]).model)
        composed.pop("_target_")
        assert model_config(name) == composed
    assert model_size("decoder_only_tiny") == {"d_model": 64, "n_heads": 4, "ffn_dim": 256, "layers": 4}


def test_decoder_only_has_the_parameters_of_the_default_encoder_decoder() -> None:
    vocab = dict(src_vocab_size=8000, tgt_vocab_size=8000)
    encoder_decoder = count_parameters(build_model(**vocab, **model_config("small")))
    decoder_only = count_parameters(build_decoder_only(**vocab, **model_config("decoder_only")))
    assert abs(decoder_only - encoder_decoder) / encoder_decoder < 0.01

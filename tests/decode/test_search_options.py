"""SearchOptions from a `decode` config group: every shipped group loads, bad values are one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from seq2seq.cli.config.launch import config_dir
from seq2seq.decode.options import TUNED_SETTINGS, SearchOptions, given_settings
from seq2seq.errors import UserError

DECODE_CONFIGS = sorted((Path(__file__).parents[2] / "configs" / "decode").glob("*.yaml"))


def composed_decode(option: str) -> dict:
    """The `decode` group as Hydra composes it (beam.yaml and sample.yaml are diffs on greedy.yaml)."""
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("translate", overrides=[f"decode={option}", "checkpoint=unused.pt"])
    return OmegaConf.to_container(cfg.decode)


@pytest.mark.parametrize("path", DECODE_CONFIGS, ids=lambda p: p.stem)
def test_every_decode_group_gives_its_options(path: Path) -> None:
    config = composed_decode(path.stem)
    options = SearchOptions.from_config(config)
    for name, value in config.items():
        if value is None:  # the model's own value, else the built-in default (seq2seq.decode.tuned_decoding)
            assert name in TUNED_SETTINGS and getattr(options, name) == getattr(SearchOptions(), name)
        else:
            assert getattr(options, name) == value


def test_null_leaves_only_the_tuned_settings_to_the_model() -> None:
    """length_penalty and max_len_a may be null (not set: the model's own, else `base`'s); nothing else."""
    assert given_settings({"length_penalty": None, "max_len_a": 1.5, "beam_size": 5}) == {"max_len_a"}
    assert given_settings(composed_decode("beam")) == frozenset()
    base = SearchOptions(length_penalty=2.0, max_len_a=0.5)
    assert SearchOptions.from_config({"length_penalty": None, "max_len_a": 1.5}, base=base) == SearchOptions(
        length_penalty=2.0, max_len_a=1.5
    )
    with pytest.raises(UserError, match=r"^decode\.beam_size=None must be int"):
        SearchOptions.from_config({"beam_size": None})


def test_describe_names_the_search() -> None:
    assert SearchOptions.from_config({"beam_size": 1}).describe() == "greedy search"
    assert SearchOptions.from_config({"beam_size": 5}).describe() == "beam 5"
    sampled = SearchOptions.from_config({"sampling": True, "top_p": 0.9})
    assert sampled.describe() == "sampling (temperature 1.0, top-k 0, top-p 0.9)"


def test_integers_are_accepted_for_floats_and_unknown_keys_are_ignored() -> None:
    options = SearchOptions.from_config({"temperature": 2, "length_penalty": 0, "comment": "x"})
    assert options.temperature == 2.0 and isinstance(options.temperature, float)
    assert options.length_penalty == 0.0


@pytest.mark.parametrize(
    ("key", "value"),
    [("seed", "abc"), ("beam_size", "abc"), ("beam_size", 2.5), ("sampling", "yes"), ("top_p", "x")],
)
def test_wrong_types_are_one_line_errors_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(UserError, match=rf"^decode\.{key}=.* must be ") as error:
        SearchOptions.from_config({key: value})
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("key", "value"), [("max_len_a", float("inf")), ("length_penalty", float("nan"))])
def test_non_finite_numbers_are_one_line_errors(key: str, value: float) -> None:
    """Hydra reads decode.max_len_a=inf as a float: refused before any model is loaded."""
    with pytest.raises(UserError, match=rf"^decode\.{key}=.* must be a finite number") as error:
        SearchOptions.from_config({key: value})
    assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="must be a finite number"):
        SearchOptions().replace(**{key: value})

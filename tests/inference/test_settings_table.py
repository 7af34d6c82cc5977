"""The settings table (seq2seq.inference.settings) cannot drift from what it describes: every CLI key it
names is in the configs and every key of configs/translate.yaml and of the beam decode group is in it;
every Python keyword is in the signature it names; every JSON field is a field of the server's request
and every such field is in it; a setting's names on its surfaces are equal unless the row says why; every
deprecated alias names a current setting or answer field; every CLI key is a name of the command settings
table (seq2seq.cli.config.command_settings), whose renamed keys are what seq2seq-translate accepts."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import deprecation_message
from seq2seq.inference.settings import (
    DEPRECATED,
    FROM_CHECKPOINT,
    SEARCH_OPTIONS,
    SETTINGS,
    TRANSLATE,
)
from seq2seq.inference.translator import Translator

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
HYDRA_KEYS = {"defaults", "hydra"}


def keys(name: str) -> set[str]:
    return set(yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8"))) - HYDRA_KEYS


def decode_keys() -> set[str]:
    """The beam group's keys: its own and those of the groups its defaults list pulls in."""
    beam = yaml.safe_load((CONFIGS / "decode" / "beam.yaml").read_text(encoding="utf-8"))
    pulled = {key for name in beam["defaults"] if name != "_self_" for key in keys(f"decode/{name}.yaml")}
    return {f"decode.{key}" for key in pulled | keys("decode/beam.yaml")}


def python_keywords(where: str) -> set[str]:
    if where == SEARCH_OPTIONS:
        return {field.name for field in dataclasses.fields(SearchOptions)}
    function: Any = {FROM_CHECKPOINT: Translator.from_checkpoint, TRANSLATE: Translator.translate}[where]
    return set(inspect.signature(function).parameters)


def server_fields() -> tuple[tuple[str, ...], dict[str, str]]:
    pytest.importorskip("starlette", reason="needs the serve extra: pip install '.[serve]'")
    from seq2seq.serve.requests import FIELDS, RENAMED_FIELDS

    return FIELDS, RENAMED_FIELDS


def test_the_cli_keys_are_the_configs():
    cli = {setting.cli for setting in SETTINGS if setting.cli is not None}
    config = keys("translate.yaml") | decode_keys() | {"decode"}
    assert cli - config == set(), "the table names keys the configs do not have"
    assert config - cli == set(), "configs/translate.yaml or the decode group has keys the table lacks"
    serve = keys("serve.yaml") | decode_keys() | {"decode"}
    for setting in SETTINGS:
        assert (setting.cli in serve) == setting.serve_cli, f"{setting.cli}: serve_cli is wrong"


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.python is not None], ids=lambda s: s.python)
def test_every_python_keyword_is_in_its_signature(setting):
    assert setting.python in python_keywords(setting.python_in)


def test_the_json_fields_are_the_servers():
    fields, renamed = server_fields()
    table = [setting.server for setting in SETTINGS if setting.server is not None]
    assert sorted(table) == sorted(fields)
    assert {alias.old: alias.new for alias in DEPRECATED if alias.surface == "server request"} == renamed


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.cli or s.python)
def test_names_agree_unless_the_row_says_why(setting):
    assert len(setting.names) == 1 or setting.differs, f"{setting.names} differ: say why in the row"
    assert not (len(setting.names) == 1 and setting.differs), "the names agree: drop the reason"


def test_every_alias_is_renamed_to_a_current_name():
    python = {(s.python_in, s.python) for s in SETTINGS}
    for alias in DEPRECATED:
        if alias.surface == "python" and " " in alias.new:  # no keyword replaces it: a phrase says why
            assert alias.old in python_keywords(alias.where)
        elif alias.surface == "python":
            assert (alias.where, alias.new) in python and alias.old in python_keywords(alias.where)
        elif alias.surface == "server request":
            assert alias.new in server_fields()[0]
        else:
            assert alias.surface == "server answer"
    assert deprecation_message("a", "b") == "a is deprecated and will stop working in the next release; use b"


def test_the_cli_keys_are_names_of_the_command_settings_table():
    """One meaning per name across commands: the translation table's CLI keys are rows of that table."""
    from seq2seq.cli.config.command_settings import NAMES, command

    names = {name.name for name in NAMES}
    for setting in SETTINGS:
        if setting.cli is not None:
            assert setting.cli.split(".")[0] in names
            assert setting.cli.split(".")[0] in command("seq2seq-translate").keys
            assert setting.serve_cli == (setting.cli.split(".")[0] in command("seq2seq-serve").keys)


def test_seq2seq_translate_accepts_the_renamed_keys_of_the_table():
    from seq2seq.cli.config.renamed_keys import deprecated_keys
    from seq2seq.cli.translate import main

    assert main.deprecated_keys == deprecated_keys("seq2seq-translate")

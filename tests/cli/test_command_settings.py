"""The command settings table (seq2seq.cli.config.command_settings) cannot drift from the commands: every
key of every command's composed config (seq2seq-score's and seq2seq-average's argument parsers) has a row
and every key a command lists is in its config; a name is defined once, so it has one meaning; every
renamed key names a current key and is what the command accepts; the manual's page shows all of it."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from seq2seq.cli.config import command_settings
from seq2seq.cli.config.command_settings import COMMANDS, NAMES, OLD_NAMES, Command, commands_with
from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.renamed_keys import deprecated_keys
from seq2seq.cli.config.schemas import register_schemas

ROOT = Path(__file__).resolve().parents[2]
HYDRA = [c for c in COMMANDS if c.config is not None]
ARGPARSE = [c for c in COMMANDS if c.config is None]


def composed_keys(config: str) -> set[str]:
    """The top-level keys of a command's config as Hydra composes it (config groups included)."""
    register_schemas()
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return set(compose(config).keys())


def test_a_name_is_defined_once_and_used() -> None:
    names = [name.name for name in NAMES]
    assert len(names) == len(set(names)), "a name with two rows would have two meanings: merge them"
    unused = [name for name in names if not commands_with(name)]
    assert not unused, f"{unused}: no command has them; drop their rows"
    assert all(name.meaning and "\n" not in name.meaning for name in NAMES)


def test_every_key_a_command_lists_has_a_row() -> None:
    names = {name.name for name in NAMES}
    for command in COMMANDS:
        assert len(command.keys) == len(set(command.keys)), f"{command.name} lists a key twice"
        assert set(command.keys) <= names, f"{command.name}: {sorted(set(command.keys) - names)} lack rows"
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


@pytest.mark.parametrize("command", HYDRA, ids=lambda c: c.name)
def test_a_hydra_commands_keys_are_its_config(command: Command) -> None:
    config = composed_keys(str(command.config))
    listed = set(command.keys)
    assert config - listed == set(), f"configs/{command.config}.yaml has keys the table lacks"
    assert listed - config == set(), f"the table lists keys configs/{command.config}.yaml lacks"


def parser_of(command: Command) -> argparse.ArgumentParser:
    return importlib.import_module(command.module).build_parser()


@pytest.mark.parametrize("command", ARGPARSE, ids=lambda c: c.name)
def test_an_argparse_commands_keys_are_its_arguments(command: Command) -> None:
    actions = [a for a in parser_of(command)._actions if not isinstance(a, argparse._HelpAction)]
    assert {a.dest for a in actions} == set(command.keys)
    assert {a.dest for a in actions if not a.option_strings} == set(command.positional)
    assert all(f"--{a.dest}" in a.option_strings for a in actions if a.option_strings)


def test_every_old_name_is_renamed_to_a_key_of_its_command() -> None:
    by_name = {c.name: c for c in COMMANDS}
    pairs = [(old.command, old.old) for old in OLD_NAMES]
    assert len(pairs) == len(set(pairs))
    for old in OLD_NAMES:
        assert old.new in by_name[old.command].keys, f"{old.command}: {old.new} is not one of its keys"
        assert old.old not in by_name[old.command].keys, f"{old.command} still has {old.old}"


@pytest.mark.parametrize("command", HYDRA, ids=lambda c: c.name)
def test_a_command_accepts_the_old_names_of_the_table_and_no_others(command: Command) -> None:
    """Its entry point's accept_deprecated_keys mapping, top-level keys only (data.filter.* keys of
    seq2seq-train and seq2seq-prepare are the data group's)."""
    main = importlib.import_module(command.module).main
    accepted = {old: new for old, new in getattr(main, "deprecated_keys", {}).items() if "." not in old}
    assert accepted == deprecated_keys(command.name)


def test_the_renames_of_this_release() -> None:
    """One name, one meaning: output is a file (export's directory is output_dir), format the document
    format (export's engine is target), input a text file (import's directory is input_dir), target
    export's (shortlist's files are src_file / tgt_file), one thread setting and one verbosity setting."""
    renamed = {(old.command, old.old): old.new for old in OLD_NAMES}
    assert renamed[("seq2seq-export", "output")] == "output_dir"
    assert renamed[("seq2seq-export", "format")] == "target"
    assert renamed[("seq2seq-import", "input")] == "input_dir"
    assert renamed[("seq2seq-shortlist", "source")] == "src_file"
    assert renamed[("seq2seq-shortlist", "target")] == "tgt_file"
    assert renamed[("seq2seq-serve", "threads")] == "num_threads"
    assert renamed[("seq2seq-qe", "quiet")] == "log_level"


def test_the_module_imports_only_the_standard_library() -> None:
    """The docs build reads it from its file, without PyTorch, Hydra or the package."""
    tree = ast.parse(Path(command_settings.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "dataclasses"}


def hook_module():
    path = ROOT / "docs" / "hooks" / "reference_pages.py"
    spec = importlib.util.spec_from_file_location("reference_pages_for_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_manual_page_shows_every_name_command_and_old_name() -> None:
    hook = hook_module()
    page = hook.commands_page()
    for name in NAMES:
        assert f"| `{name.name}` |" in page
    for command in COMMANDS:
        assert f"- **{command.name}** (" in page
    assert "`--metrics`" in page and "`hypotheses` (positional)" in page  # argparse commands as typed
    for old in OLD_NAMES:
        assert f"| {old.command} | `{old.old}` |" in page
    assert "`quiet=true`: `log_level=warning`" in page
    settings_page = hook.settings_page()
    assert "| cli | seq2seq-translate | `prefix` | `prefixes` |" in settings_page
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    assert hook.COMMANDS_PAGE in str(nav), "list the page in mkdocs.yml's nav"

"""Every key in configs/ has a comment, so the manual's configuration reference describes each one.

The rule (docs/concepts.md, "Every key has a comment"; the reader is docs/hooks/config_comments.py,
the same one that generates the reference page):

* A file opens with a comment block that says what it is (after the `# @package ...` line, if any).
  That block describes the file, not the key below it.
* Every key of a block mapping, at any depth (`hydra:` sections and sweep `params:` included), has a
  comment: an inline `# ...` on its line (it may go on over the following lines, each `#` in the same
  column as the first), or one or more comment lines directly above it (no blank line between) that
  start in the key's own column.
* Keys inside a one-line flow collection (`{src: a, tgt: b}`, `[0.9, 0.98]`) are covered by the comment
  of the key that holds it.
* List items are not keys: a list of values is described by its key's comment; a mapping inside a list
  item follows the key rule (its first key may also take the comment above its dash).
* The `defaults:` list and its entries need no comment: each entry names a config file, and that file's
  opening comment describes it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
CONFIGS = REPOSITORY / "configs"


def _reader():
    path = REPOSITORY / "docs" / "hooks" / "config_comments.py"
    spec = importlib.util.spec_from_file_location("config_comments", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["config_comments"] = module
    spec.loader.exec_module(module)
    return module


config_comments = _reader()
FILES = sorted(p.relative_to(CONFIGS) for p in CONFIGS.rglob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=[p.as_posix() for p in FILES])
def test_every_key_has_a_comment(path: Path) -> None:
    config = config_comments.read_config(CONFIGS, path)
    assert any(line.strip() for line in config.header), (
        f"configs/{path.as_posix()} does not open with a comment saying what it is"
    )
    missing = [f"configs/{path.as_posix()}:{e.line}: {e.key}" for e in config.missing_comments()]
    assert not missing, "keys without a comment (inline, or on the lines directly above):\n" + "\n".join(
        missing
    )


def _read(tmp_path: Path, text: str):
    (tmp_path / "group").mkdir(exist_ok=True)
    (tmp_path / "group" / "option.yaml").write_text(text, encoding="utf-8")
    return config_comments.read_config(tmp_path, Path("group/option.yaml"))


def test_the_rule_on_each_kind_of_line(tmp_path: Path) -> None:
    config = _read(
        tmp_path,
        "# @package _global_\n"
        "# What this file is.\n"
        "defaults:\n"
        "  - other\n"
        "  - _self_\n"
        "\n"
        "first: 1\n"
        "inline: 2   # said here\n"
        "            # and continued here\n"
        "# said above\n"
        "above: 3\n"
        "section:    # a section\n"
        "  child: {a: 1, b: 2}  # the flow mapping's keys are covered\n"
        "  bare: 4\n"
        "    # not in bare's column, so not a comment above it\n"
        "  next: 5\n"
        "items:  # a list of mappings\n"
        "  # the first item's first key\n"
        "  - name: x\n"
        "    value: 1  # and its second key\n"
        "text: |-  # a block of text\n"
        "  key: not a key\n",
    )
    assert config.package == ""
    assert config.header == ["What this file is."]
    assert config.defaults == ["other", "_self_"]
    comments = {entry.key: entry.comment for entry in config.entries}
    assert comments == {
        "first": "",
        "inline": "said here and continued here",
        "above": "said above",
        "section": "a section",
        "section.child": "the flow mapping's keys are covered",
        "section.bare": "",
        "section.next": "",
        "items": "a list of mappings",
        "items[0].name": "the first item's first key",
        "items[0].value": "and its second key",
        "text": "a block of text",
    }
    assert [e.key for e in config.missing_comments()] == ["first", "section.bare", "section.next"]


def test_a_group_option_s_keys_live_under_its_package(tmp_path: Path) -> None:
    assert _read(tmp_path, "# A model size.\nd_model: 64  # width\n").package == "group"
    assert _read(tmp_path, "# @package model\n# A window.\nwindow: 8  # width\n").package == "model"


def test_the_opening_block_describes_the_file_not_its_first_key(tmp_path: Path) -> None:
    config = _read(tmp_path, "# What this file is.\nkey: 1\n")
    assert config.header == ["What this file is."]
    assert [e.key for e in config.missing_comments()] == ["key"]

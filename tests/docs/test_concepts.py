"""docs/concepts.md says what the code says: the order of the layers, the model families, the commands
and the primary configs, each read from where the code keeps it."""

from __future__ import annotations

import ast
import keyword
import re
from pathlib import Path

import pytest
import tomllib
from test_import_direction import LAYERS  # tests/ is on sys.path (tests/conftest.py)

from seq2seq.model import FAMILY_BUILDERS
from seq2seq.model.families import FAMILIES

REPOSITORY = Path(__file__).resolve().parents[2]
PAGE = (REPOSITORY / "docs" / "concepts.md").read_text(encoding="utf-8")


def section(heading: str) -> str:
    """The text under `## heading`, up to the next heading of any level."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^#)", PAGE + "\n#", flags=re.S | re.M)
    assert match, f"docs/concepts.md has no '## {heading}' section"
    return match.group(1)


def bullets(heading: str) -> list[str]:
    """The first `code` of each bullet under `## heading`, in order."""
    return re.findall(r"^- `([^`]+)`", section(heading), flags=re.M)


def package_docstring_order() -> list[str]:
    """The modules and packages seq2seq/__init__.py's docstring lists, in its (import) order."""
    docstring = ast.get_docstring(ast.parse((REPOSITORY / "seq2seq" / "__init__.py").read_text("utf-8")))
    return re.findall(r"^(\w+)(?:\.py|/) {2,}\S", docstring or "", flags=re.M)


def test_the_layer_line_is_the_import_order() -> None:
    (line,) = re.findall(r"^```text\n(.*?)\n```", section("The layers"), flags=re.M)
    ranks = [re.split(r"\s*[,|]\s*", rank.strip()) for rank in line.split("->")]
    assert [name for rank in ranks for name in rank] == LAYERS == package_docstring_order()
    assert ["train", "inference"] in ranks  # one rank: side by side, neither imports the other


def test_the_layer_table_has_one_row_per_layer() -> None:
    rows = re.findall(r"^\| `seq2seq\.(\w+)` \|", section("The layers"), flags=re.M)
    assert rows == LAYERS


def test_the_families_are_the_recorded_names() -> None:
    assert bullets("The three model families") == list(FAMILIES) == list(FAMILY_BUILDERS)
    assert len(FAMILIES) == 3  # the heading says so


def test_the_commands_are_the_console_scripts() -> None:
    scripts = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert bullets("The commands") == list(scripts)


def test_the_primary_configs_are_the_top_level_configs_each_with_its_command() -> None:
    listed = bullets("The primary configs")
    assert sorted(listed) == sorted(f"configs/{p.name}" for p in (REPOSITORY / "configs").glob("*.yaml"))
    assert len(set(listed)) == len(listed)
    commands = re.findall(r"^- `configs/(\w+)\.yaml`: `([\w-]+)`", section("The primary configs"), flags=re.M)
    assert len(commands) == len(listed)
    for name, command in commands:
        assert command == "seq2seq-" + name.replace("_", "-")
        module = f"{name}_model" if keyword.iskeyword(name) else name  # seq2seq-import: cli/import_model.py
        assert f'config_name="{name}"' in (REPOSITORY / "seq2seq" / "cli" / f"{module}.py").read_text("utf-8")


@pytest.mark.parametrize("stale", ["two families", "no registries", "the two Transformer families"])
def test_stale_claims_are_gone(stale: str) -> None:
    assert stale not in PAGE.lower()

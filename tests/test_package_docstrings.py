"""Every package's __init__ docstring lists its modules and subpackages: a newcomer reads it to know
where any line belongs, so a module it leaves out is a module nobody is told about."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seq2seq"
PACKAGES = sorted(path.parent for path in PACKAGE.rglob("__init__.py"))


def members(package: Path) -> list[str]:
    """The names of the package's modules and subpackages, each to be named `name.py` or `name/`."""
    modules = [path.stem for path in package.glob("*.py") if path.name != "__init__.py"]
    return sorted(modules + [path.parent.name for path in package.glob("*/__init__.py")])


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_the_package_docstring_names_every_module(package: Path) -> None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    missing = [name for name in members(package) if not re.search(rf"(?<![\w.]){name}(\.py|/)", docstring)]
    assert not missing, f"{package.relative_to(PACKAGE.parent)}/__init__.py's docstring leaves out {missing}"


def test_the_check_sees_the_packages() -> None:
    assert {"decode", "bible"} <= {package.name for package in PACKAGES}
    assert "sword" in members(PACKAGE / "data" / "bible")


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_the_package_docstring_names_no_module_that_is_gone(package: Path) -> None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    listed = re.findall(r"^(\w+)(?:\.py|/)", docstring, flags=re.MULTILINE)  # the listing's first column
    assert set(listed) <= set(members(package)), (
        f"{package.relative_to(PACKAGE.parent)} lists missing modules"
    )

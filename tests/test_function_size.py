"""Every function of the package stays readable at a glance: no body (docstring aside) over 50 lines; a
longer one is split into pieces named for what they do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(path.name for path in (ROOT / "seq2seq").iterdir() if (path / "__init__.py").exists())
MOST_LINES = 50


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's end."""
    body = function.body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    first = body[1] if has_docstring and len(body) > 1 else body[0]
    return int(function.end_lineno or first.lineno) - first.lineno + 1


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_body_is_over_50_lines(package: str) -> None:
    long = {}
    for path in sorted((ROOT / "seq2seq" / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(node) > MOST_LINES:
                long[f"{path.relative_to(ROOT)}:{node.name}"] = body_lines(node)
    assert long == {}

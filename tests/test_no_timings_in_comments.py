"""Timings go stale where nobody reruns them: comments and docstrings keep the reasoning, and the
figures live in benchmarks/results.md ("Figures moved from code comments"), with where they came from."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "seq2seq"
TIMING = re.compile(
    r"\d[\d.,]*\s?(ms|µs|us|seconds?)\b|\d[\d.]*x (faster|slower)|\d[\d.]* s (instead|against|vs)"
)


def prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a module."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                found.append((node.body[0].lineno, docstring))
    return found


def test_no_timing_figures_in_comments_or_docstrings() -> None:
    hits = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {match.group(0)!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in prose(path.read_text(encoding="utf-8"))
        for match in TIMING.finditer(text)
    ]
    assert not hits, "move these figures to benchmarks/results.md: " + "; ".join(hits)


def test_the_check_sees_a_timing() -> None:
    assert TIMING.search("# took 2.7 ms instead of 1.3") and not TIMING.search("# batch_wait_ms: the wait")

"""Griffe extension for the API reference: the package's column-aligned docstring text stays aligned.

Docstrings here are plain text, and several lay out lists in columns ("positional.py   position
information: ...", "keep:   (B, Tk) True = attend"). Markdown would run those lines together into one
paragraph, so a paragraph with such a line becomes a preformatted block (an introducing line that ends
in a colon stays prose). Paragraphs indented as code, fenced blocks and all other text are unchanged.
Loaded by mkdocstrings (mkdocs.yml: plugins → mkdocstrings → python → options → extensions).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

COLUMNS = re.compile(r"\S {2,}\S")


def _paragraph(lines: list[str]) -> list[str]:
    if all(line.startswith("    ") for line in lines):
        return lines
    if not any(COLUMNS.search(line.strip()) for line in lines):
        return lines
    intro: list[str] = []
    if not COLUMNS.search(lines[0]) and lines[0].rstrip().endswith(":") and len(lines) > 1:
        intro, lines = [lines[0], ""], lines[1:]
    body = textwrap.dedent("\n".join(lines)).splitlines()
    return [*intro, "```text", *body, "```"]


def preformat_columns(text: str) -> str:
    """The docstring with every column-aligned paragraph fenced as text."""
    if "```" in text:  # fences of its own: leave it as written
        return text
    out: list[str] = []
    paragraph: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip():
            paragraph.append(line)
            continue
        if paragraph:
            out += _paragraph(paragraph)
            paragraph = []
        out.append("")
    return "\n".join(out).rstrip() + "\n"


class ColumnDocstrings(griffe.Extension):
    """Apply `preformat_columns` to every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = preformat_columns(obj.docstring.value)

"""What the document formats hand to the Translator, and how its answers go back into the text they came from.

A segment's whitespace is the document's, not the model's: the leading and trailing whitespace of each
segment (a PO message, an XLIFF source, the text of an HTML block) is kept around its translation, and
where line breaks matter (PO messages, XLIFF with xml:space="preserve") each line is translated on its
own and the lines are joined with the source's own breaks, so "Usage: %s\\n" gets a translation that ends
with "\\n" as gettext requires, and an empty line stays empty. A line break inside a tag (`<a\\nhref="x">`)
splits nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.markup import markup_pattern

# (segments, markup mode) -> their translations: Translator.translate's texts, as markup="true" or "auto"
Translate = Callable[[Sequence[str], str], list[str]]

_BREAK = re.compile(r"\r\n|\n|\r")
_TAGS = markup_pattern([])  # tags and entities only: where a line break is no break


def needs(module: str) -> Any:
    """An optional library, or a one-line UserError naming the extra that brings it."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise UserError(
            f"this format needs {module.split('.')[0]}: pip install 'seq2seq[documents]'"
        ) from None


@dataclass(frozen=True)
class _Part:
    """A line of a segment: its leading whitespace, what is translated, its trailing whitespace and the
    line break after it ("" for the last line)."""

    lead: str
    core: str
    trail: str
    end: str


def translated_in_place(
    translate: Translate, texts: Sequence[str], markup: str, *, lines: Sequence[bool]
) -> list[str]:
    """The translations of `texts` by `translate`, each keeping its text's edge whitespace and, where
    `lines` says so, its line structure: one call for all the lines of all the texts."""
    parts = [_parts(text, lines=by_line) for text, by_line in zip(texts, lines)]
    cores = [part.core for text_parts in parts for part in text_parts if part.core]
    done = iter(translate(cores, markup) if cores else [])
    return ["".join(p.lead + (next(done) if p.core else "") + p.trail + p.end for p in text_parts)
            for text_parts in parts]  # fmt: skip


def _parts(text: str, *, lines: bool) -> list[_Part]:
    """`text` split at its line breaks outside tags (with `lines`; else one part), each part's edge
    whitespace apart from its core."""
    chunks: list[tuple[str, str]] = []
    start = 0
    if lines:
        inside = [(m.start(), m.end()) for m in _TAGS.finditer(text) if m.lastgroup == "tag"]
        for found in _BREAK.finditer(text):
            if not any(a < found.start() < b for a, b in inside):
                chunks.append((text[start : found.start()], found.group()))
                start = found.end()
    chunks.append((text[start:], ""))
    parts = []
    for line, end in chunks:
        core = line.strip()
        lead = line[: len(line) - len(line.lstrip())]
        trail = line[len(lead) + len(core) :] if core else line[len(lead) :]
        parts.append(_Part(lead, core, trail, end))
    return parts

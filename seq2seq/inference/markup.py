"""Inline markup and placeholders in a line to translate: taken out before the model reads the line, and
put back into its translation by word alignment afterwards (seq2seq.inference.tag_projection).

Markup is whatever must come out of a translation byte for byte:
- tags: HTML/XML start tags (attributes with quoted `>` too), end tags, self-closing tags, comments, CDATA
  sections, processing instructions and declarations (`<!DOCTYPE ...>`);
- entities (`&amp;`, `&#233;`, `&#xE9;`): the model reads the character they stand for; the translation's
  text is escaped again when the line held tags or entities, so that well-formed input gives well-formed
  output;
- placeholders: by default `{0}`, `{name}`, `${name}`, printf-style `%s`, `%d`, `%1$s`, `%(name)s`, URLs,
  e-mail addresses and numbers (DEFAULT_PLACEHOLDERS); a user may give other patterns.

A start tag and its matching end tag are a *pair*; everything else is a *point*: a self-closing or void
tag (`<br>`), a comment, a placeholder, an end tag without its start tag, a start tag never closed. The
*plain text* is what remains, with the whitespace around a removed item collapsed to one space: that is
what the model translates.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from seq2seq.errors import UserError

# Placeholder patterns, tried in this order where several match at one place.
DEFAULT_PLACEHOLDERS: tuple[str, ...] = (
    r"\$\{[^{}\s]*\}",  # ${name}
    r"\{[^{}\s]*\}",  # {0}, {name}, {}
    r"%(?:\d+\$|\([A-Za-z_]\w*\))?[-+ #0]*\d*(?:\.\d+)?[sdifouxXeEgGcr%]",  # %s, %1$s, %(name)s, %.2f
    r"(?:https?|ftp)://[^\s<>\"']+[^\s<>\"'.,;:!?)\]]",  # URLs (trailing punctuation stays text)
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # e-mail addresses
    r"\b\d+(?:[.,:]\d+)*\b",  # numbers standing alone: 3, 3.14, 1,000, 1:1 (not the 2 of "mp3")
)

# HTML elements that never have an end tag: a start tag of one is a point.
VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta param source track wbr".split())
# HTML elements that end a word: text on either side of one of their tags is two words to the model.
WORD_BREAKING = frozenset(
    "address article aside blockquote br dd div dl dt figcaption figure footer h1 h2 h3 h4 h5 h6 header hr "
    "li main nav ol p pre section table tbody td tfoot th thead tr ul".split()
)

_ATTRIBUTE = r"""(?:\s+[^\s"'<>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)"""
_TAG = (
    r"<!--.*?-->"  # comment
    r"|<!\[CDATA\[.*?\]\]>"  # CDATA section
    r"|<\?.*?\?>"  # processing instruction
    r"|<![A-Za-z][^<>]*>"  # declaration (<!DOCTYPE html>)
    rf"|</?[A-Za-z][\w:.-]*{_ATTRIBUTE}*\s*/?>"  # start, end or self-closing tag
)
_ENTITY = r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
_TAG_NAME = re.compile(r"</?([A-Za-z][\w:.-]*)")


@dataclass(frozen=True)
class Element:
    """One tag or placeholder: its text as it stood in the line, where it stood in the plain text, and
    whether whitespace (or the line's start or end) separated it from the text before and after it."""

    text: str
    kind: str  # "open" | "close" (a pair's tags) | "point"
    offset: int  # character offset in the plain text
    space_before: bool
    space_after: bool
    name: str = ""  # a tag's lower-cased name ("" for anything else)


@dataclass(frozen=True)
class Marked:
    """A line with its markup taken out: the plain text, the elements in line order, the pairs as
    (start tag, end tag) indices into `elements`, and whether the translation's text must be escaped."""

    plain: str
    elements: tuple[Element, ...]
    pairs: tuple[tuple[int, int], ...]
    escape: bool


def markup_pattern(placeholders: Sequence[str] | None = None) -> re.Pattern[str]:
    """The one pattern that finds tags, entities and placeholders (DEFAULT_PLACEHOLDERS when None; []
    for none). A placeholder pattern that is no regular expression is a UserError naming it."""
    chosen = DEFAULT_PLACEHOLDERS if placeholders is None else tuple(placeholders)
    for pattern in chosen:
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise UserError(
                f"placeholder pattern {pattern!r} is no regular expression ({error}); fix it"
            ) from None
        if compiled.match(""):
            raise UserError(
                f"placeholder pattern {pattern!r} matches empty text; make it match at least a character"
            )
    alternatives = [f"(?P<tag>{_TAG})", f"(?P<entity>{_ENTITY})"]
    if chosen:
        alternatives.append("(?P<placeholder>" + "|".join(f"(?:{p})" for p in chosen) + ")")
    return re.compile("|".join(alternatives), re.DOTALL)


def has_markup(line: str, pattern: re.Pattern[str]) -> bool:
    return pattern.search(line) is not None


def parse_markup(line: str, pattern: re.Pattern[str]) -> Marked:
    """`line` split into its plain text and its elements (see the module's docstring)."""
    plain: list[str] = []
    elements: list[Element] = []
    escape, position, length = False, 0, 0
    for found in pattern.finditer(line):
        length += _append_text(plain, line[position : found.start()])
        position = found.end()
        if found.lastgroup == "entity":
            escape = True
            length += _append_text(plain, html.unescape(found.group()))
            continue
        escape = escape or found.lastgroup == "tag"
        before = found.start() == 0 or line[found.start() - 1].isspace()  # the line's edges count as space
        after = found.end() == len(line) or line[found.end()].isspace()
        kind, name = _tag_kind(found.group()) if found.lastgroup == "tag" else ("point", "")
        elements.append(Element(found.group(), kind, length, before, after, name))
        if name in WORD_BREAKING:
            length += _append_text(plain, " ")
    _append_text(plain, line[position:])
    text = "".join(plain).rstrip()
    elements, pairs = _paired([_clamped(e, len(text)) for e in elements])
    return Marked(text, tuple(elements), tuple(pairs), escape)


def _append_text(plain: list[str], text: str) -> int:
    """Appends `text`, collapsing whitespace where a removed element left two runs of it side by side;
    returns the length appended. Whitespace is dropped at the start, as it is at the end."""
    if text and (not plain or plain[-1][-1].isspace()) and text[0].isspace():
        text = text.lstrip()
    if text:
        plain.append(text)
    return len(text)


def _clamped(element: Element, length: int) -> Element:
    """The element at most at offset `length` (the plain text lost its trailing whitespace)."""
    if element.offset <= length:
        return element
    return Element(
        element.text, element.kind, length, element.space_before, element.space_after, element.name
    )


def _tag_kind(tag: str) -> tuple[str, str]:
    """ "open" / "close" for a start or end tag that may pair, "point" for everything else."""
    name = _TAG_NAME.match(tag)
    if name is None or tag.endswith("/>"):
        return "point", name.group(1).lower() if name else ""
    lowered = name.group(1).lower()
    if tag.startswith("</"):
        return "close", lowered
    return ("point" if lowered in VOID_ELEMENTS else "open"), lowered


def _paired(elements: list[Element]) -> tuple[list[Element], list[tuple[int, int]]]:
    """Matches end tags to start tags by name, innermost first; an end tag whose start tag is not open,
    and a start tag left open (or open inside a pair that closes around it), become points."""
    stack: list[int] = []
    pairs: list[tuple[int, int]] = []
    as_point: set[int] = set()
    for index, element in enumerate(elements):
        if element.kind == "open":
            stack.append(index)
        elif element.kind == "close":
            opened = [i for i in stack if elements[i].name == element.name]
            if not opened:
                as_point.add(index)
                continue
            start = opened[-1]
            while stack[-1] != start:  # tags opened inside this pair and never closed
                as_point.add(stack.pop())
            stack.pop()
            pairs.append((start, index))
    as_point.update(stack)
    fixed = [
        Element(e.text, "point", e.offset, e.space_before, e.space_after, e.name) if i in as_point else e
        for i, e in enumerate(elements)
    ]
    return fixed, sorted(pairs)

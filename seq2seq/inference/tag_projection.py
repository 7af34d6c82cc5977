"""Putting a line's markup (seq2seq.inference.markup) back into its translation, by word alignment.

The units are the pieces the model read and wrote, each a character span of the plain source text or of
the translation; `alignment` links source units to target units (argmax cross-attention gives each
target unit one source unit; a guided-alignment head gives better ones). Rules:

- a pair of tags around source units [a, b) surrounds the target units aligned to any of them, from the
  first to the last; aligned to none, it closes where it opens, at the place the units before it map to;
- a point glued to the unit before it (no space between) follows that unit's translation; glued to the
  unit after it, it precedes that unit's translation; otherwise it goes where the units before it map to;
- nesting is kept: elements are put back as a tree walk of the source's tags (children in the order of
  their translations), each at its place or, where that would break the nesting, right after the element
  before it. So every tag and placeholder of the source appears exactly once, in a well-formed
  structure whenever the source's was.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from seq2seq.inference.markup import Element, Marked

Span = tuple[int, int]  # a unit's [start, end) characters


@dataclass(frozen=True)
class _Point:
    """A point and the number of source units before it."""

    element: Element
    gap: int


@dataclass
class _Node:
    """A pair of tags (the root: none) and what lies inside it: source units [first, end), children."""

    tags: tuple[Element, Element] | None
    first: int
    end: int
    children: list[_Node | _Point] = field(default_factory=list)


def restore_markup(
    marked: Marked,
    source_spans: Sequence[Span],
    translation: str,
    target_spans: Sequence[Span],
    alignment: Iterable[tuple[int, int]],
) -> str:
    """The translation of `marked.plain` with every element of `marked` put back (module docstring).
    `source_spans` / `target_spans`: the units' character spans in marked.plain / translation, in order;
    `alignment`: (source unit, target unit) links."""
    targets = _trimmed(target_spans, translation)
    links = _links(alignment, len(source_spans), len(targets))
    root = _tree(marked, [(s, e) for s, e in _trimmed(source_spans, marked.plain)])
    placer = _Placer(links, targets, translation)
    events: list[tuple[int, Element]] = []
    placer.walk(root, events)
    return _assembled(translation, events, escape=marked.escape)


def _trimmed(spans: Sequence[Span], text: str) -> list[Span]:
    """Spans without their leading and trailing whitespace (sentencepiece's word-initial pieces own the
    space before them); an all-space span shrinks to its end."""
    out = []
    for start, end in spans:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        out.append((start, end))
    return out


def _links(alignment: Iterable[tuple[int, int]], sources: int, targets: int) -> list[list[int]]:
    """Per source unit, the target units aligned to it (links outside either side are ignored)."""
    links: list[list[int]] = [[] for _ in range(sources)]
    for source, target in alignment:
        if 0 <= source < sources and 0 <= target < targets:
            links[source].append(target)
    return links


def _tree(marked: Marked, sources: Sequence[Span]) -> _Node:
    """The source's elements as a tree of pairs, each with the source units it surrounds."""
    closing = dict(marked.pairs)
    closed = set(closing.values())
    root = _Node(None, 0, len(sources))
    stack = [root]
    for index, element in enumerate(marked.elements):
        if index in closing:
            tags = (element, marked.elements[closing[index]])
            node = _Node(tags, _units_from(element.offset, sources), 0)
            stack[-1].children.append(node)
            stack.append(node)
        elif index in closed:
            node = stack.pop()
            node.end = max(node.first, _units_before(element.offset, sources))
        else:
            stack[-1].children.append(_Point(element, _units_from(element.offset, sources)))
    return root


def _units_from(offset: int, sources: Sequence[Span]) -> int:
    """The first unit that ends after `offset` (a unit the offset cuts belongs to what follows)."""
    return sum(1 for _, end in sources if end <= offset)


def _units_before(offset: int, sources: Sequence[Span]) -> int:
    """How many units start before `offset` (a unit the offset cuts belongs to what precedes)."""
    return sum(1 for start, _ in sources if start < offset)


class _Placer:
    """Target places of the tree's elements: character offsets in the translation, in walk order."""

    def __init__(self, links: list[list[int]], targets: list[Span], translation: str) -> None:
        self.links, self.targets, self.text = links, targets, translation

    def walk(self, node: _Node, events: list[tuple[int, Element]]) -> None:
        """Appends (offset, element) for `node`'s children and, depth first, theirs: children in the order
        of their places in the translation (ties: source order)."""
        placed = [(self._start(child), order, child) for order, child in enumerate(node.children)]
        for _, _, child in sorted(placed, key=lambda item: (item[0], item[1])):
            if isinstance(child, _Point):
                events.append((self._point(child), child.element))
            elif child.tags is not None:
                opening, closing = self._span(child.first, child.end)
                events.append((opening, child.tags[0]))
                self.walk(child, events)
                events.append((closing, child.tags[1]))

    def _start(self, child: _Node | _Point) -> int:
        return self._point(child) if isinstance(child, _Point) else self._span(child.first, child.end)[0]

    def _span(self, first: int, end: int) -> tuple[int, int]:
        """Where a pair around source units [first, end) opens and closes in the translation."""
        aligned = [t for s in range(first, end) for t in self.links[s]]
        if not aligned:
            place = self._gap_offset(self._gap_after(first))
            return place, place
        return self._before(min(aligned)), self._after(max(aligned))

    def _point(self, point: _Point) -> int:
        """Glued to the unit before: after its translation; glued to the unit after: before its
        translation; else where the units before it map to."""
        element, gap, links = point.element, point.gap, self.links
        if not element.space_before and 0 < gap <= len(links) and links[gap - 1]:
            return self._after(max(links[gap - 1]))
        if not element.space_after and gap < len(links) and links[gap]:
            return self._before(min(links[gap]))
        return self._gap_offset(self._gap_after(gap))

    def _gap_after(self, units: int) -> int:
        """The target gap after the translations of the first `units` source units: one past the last
        target unit they align to (0 when they align to none)."""
        aligned = [t for s in range(min(units, len(self.links))) for t in self.links[s]]
        return max(aligned) + 1 if aligned else 0

    def _gap_offset(self, gap: int) -> int:
        """The character offset of a target gap: before its next unit (the end: the text's end)."""
        return self._before(gap) if gap < len(self.targets) else len(self.text)

    def _before(self, unit: int) -> int:
        """Where the word of target unit `unit` starts: markup goes between words, not inside one
        (a unit that continues a word, a subword piece, moves the place to the word's start)."""
        offset, text = self.targets[unit][0], self.text
        while 0 < offset < len(text) and text[offset - 1].isalnum() and text[offset].isalnum():
            offset -= 1
        return offset

    def _after(self, unit: int) -> int:
        """Where the word of target unit `unit` ends (see _before)."""
        offset, text = self.targets[unit][1], self.text
        while 0 < offset < len(text) and text[offset - 1].isalnum() and text[offset].isalnum():
            offset += 1
        return offset


def _assembled(translation: str, events: list[tuple[int, Element]], *, escape: bool) -> str:
    """The translation with each element inserted at its offset, offsets made non-decreasing in walk
    order (the nesting wins over a place), the text between escaped when the source was markup, and a
    space where the element had one in the source and would otherwise touch a word or the element
    before it (not punctuation)."""
    out: list[str] = []
    cursor, after_element = 0, False
    for offset, element in events:
        offset = max(offset, cursor)
        text = translation[cursor:offset]
        out.append(html.escape(text, quote=False) if escape else text)
        after_element = after_element and not text
        last = next((piece[-1] for piece in reversed(out) if piece), "")
        if element.space_before and (last.isalnum() or (after_element and not last.isspace())):
            out.append(" ")
        out.append(element.text)
        if element.space_after and offset < len(translation) and translation[offset].isalnum():
            out.append(" ")
        cursor, after_element = offset, True
    rest = translation[cursor:]
    out.append(html.escape(rest, quote=False) if escape else rest)
    return "".join(out)

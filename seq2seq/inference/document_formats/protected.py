"""Inline content a translation carries byte for byte, unread by the model: inside an HTML block its code,
kbd, samp, var, script, style, pre, textarea (and any element with translate="no"); in XLIFF the native
codes (1.2's <ph>, <bpt>, <ept>, <it>, <bx>, <ex>; 2.0's <ph>, <sc>, <ec>, <cp>) and protected spans
(<mrk translate="no">, 1.2's <mrk mtype="protected">).

Before a segment is serialized for the search, each such element is swapped for an empty placeholder
element whose name the document does not use. The markup module (seq2seq.inference.markup) reads a
placeholder as a point, and the start and end codes of one span (<bpt>/<ept>, <bx>/<ex>, <sc>/<ec>) as
a pair, so the span is placed around the words it marks. After the search, the placeholders of the
translated markup become the original elements again: the same element objects, never re-serialized.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

START, END = "start", "end"


class Protected:
    """The protected elements of one document, each under its number, and the placeholders standing in
    for them. `taken`: the element names the document uses (a placeholder name must be none of them);
    `html`: placeholders are written for an HTML parser (which reads `<x/>` as a start tag)."""

    def __init__(self, taken: Iterable[str], *, html: bool) -> None:
        names = {name.lower() for name in taken}
        prefix = "seq2seq-kept"
        while any(name.startswith(prefix) for name in names):
            prefix += "-x"
        self.prefix, self.html = prefix, html
        self.originals: dict[int, Any] = {}
        self._closing: dict[int, int] = {}  # the number of a span's end code -> its start code's

    def swap(self, element: Any) -> int:
        """Puts a placeholder where `element` stands in its tree (the tail stays in place) and keeps the
        element, detached, under the placeholder's number."""
        number = len(self.originals)
        tag = element.tag
        namespace = tag[: tag.index("}") + 1] if tag.startswith("{") else ""
        placeholder = element.makeelement(f"{namespace}{self.prefix}-{number}", {})
        placeholder.tail, element.tail = element.tail, None
        element.getparent().replace(element, placeholder)
        self.originals[number] = element
        return number

    def pair(self, start: int, end: int) -> None:
        """Marks the placeholders `start` and `end` as the start and end codes of one span."""
        self._closing[end] = start

    def for_model(self, markup: str) -> str:
        """Serialized markup with each placeholder as a point (`<name/>`), a span's codes as a pair of
        tags (`<name>`, `</name>`)."""
        pattern = re.compile(rf"<{re.escape(self.prefix)}-(\d+)\s*(?:/>|>\s*</{re.escape(self.prefix)}-\1>)")

        def written(found: re.Match[str]) -> str:
            number = int(found.group(1))
            if number in self._closing:
                return f"</{self.prefix}-{self._closing[number]}>"
            if number in self._closing.values():
                return f"<{self.prefix}-{number}>"
            return f"<{self.prefix}-{number}/>"

        return pattern.sub(written, markup)

    def from_model(self, markup: str) -> str:
        """A translation's markup with every placeholder an empty element again (for_model undone)."""
        ends = {start: end for end, start in self._closing.items()}
        prefix = re.escape(self.prefix)

        def element(number: int) -> str:
            name = f"{self.prefix}-{number}"
            return f"<{name}></{name}>" if self.html else f"<{name}/>"

        def written(found: re.Match[str]) -> str:
            number = int(found.group(2))
            if not found.group(1):
                return element(number)
            return element(ends[number]) if number in ends else found.group()

        return re.sub(rf"<(/?){prefix}-(\d+)\s*/?>", written, markup)

    def restore(self, container: Any, numbers: Iterable[int]) -> None:
        """Replaces every placeholder below `container` (the element holding a translated segment) by
        its original element; the originals of `numbers` (the segment's) whose placeholder did not come
        back are appended to the container, with a warning."""
        found = set()
        for placeholder in [
            e for e in container.iter() if e is not container and self._number(e) is not None
        ]:
            number = self._number(placeholder)
            if number in found or number not in self.originals:
                _drop(placeholder)  # not one of ours to give back
                continue
            found.add(number)
            original = self.originals[number]
            original.tail = placeholder.tail
            placeholder.getparent().replace(placeholder, original)
        missing = [number for number in numbers if number not in found]
        for number in missing:
            container.append(self.originals[number])
        if missing:
            log.warning(
                "%d protected inline element(s) did not come back in the markup; appended", len(missing)
            )

    def _number(self, element: Any) -> int | None:
        if not isinstance(element.tag, str):
            return None
        local = element.tag.rsplit("}", 1)[-1]
        if not local.startswith(self.prefix + "-"):
            return None
        rest = local[len(self.prefix) + 1 :]
        return int(rest) if rest.isdigit() else None


def _drop(element: Any) -> None:
    """Removes `element` from its tree, its tail kept as text where it stood."""
    parent, previous = element.getparent(), element.getprevious()
    if element.tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)

"""format=html: a page or a fragment, read with lxml's HTML parser and written back with HTML serialization
(void elements stay void, every other element keeps its end tag; the input's doctype, or none).

Segments: a run of text and inline elements that no block element interrupts (the content of a paragraph,
heading, list item, table cell, title, ...; also the text between the blocks of an element that holds
both) is one segment, inline tags and all. Inside a segment, code, kbd, samp, var, script, style, pre,
textarea and elements with translate="no" are kept as they are, placed as one unit (protected.py).
Elements whose content is no text (script, style, code, pre, ...) and subtrees with translate="no"
hold no segment (a block inside one that says translate="yes" does). Attributes are kept as they are.
Files are read in the charset their BOM or <meta charset> declares (UTF-8 when none) and written in it,
characters it cannot hold as character references.
"""

from __future__ import annotations

import codecs
import html
import re
from dataclasses import dataclass, field
from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.document_formats.protected import Protected
from seq2seq.inference.document_formats.segments import Translate, needs, translated_in_place

# Elements whose content is no text to translate, and those that hold blocks of text.
SKIPPED = frozenset("script style code pre textarea kbd samp var svg math template noscript".split())
BLOCKS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main nav ol p section summary table tbody td "
    "tfoot th thead title tr ul head option optgroup select button label legend menu search".split()
)

_DOCTYPE_AND_COMMENTS = re.compile(r"\A\ufeff?(?:\s|<!--.*?-->|<!doctype[^>]*>)*", re.IGNORECASE | re.DOTALL)
_HTML_START = re.compile(r"<html[\s>]", re.IGNORECASE)
_HTML_END = re.compile(r"</html\s*>(?:\s|<!--.*?-->)*\Z", re.IGNORECASE | re.DOTALL)
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@dataclass
class _Run:
    """Children [start, end) of `parent` and the text before them: parent.text when start is 0, else
    the tail of the child before (a block). `kept`: the numbers of its protected elements."""

    parent: Any
    start: int
    end: int
    kept: list[int] = field(default_factory=list)


def translate_html_bytes(data: bytes, translate: Translate) -> bytes:
    """An HTML file translated, in the charset it was read in."""
    charset, text = _decoded(data)
    out = translate_html(text, translate)
    if out == text:
        return data  # nothing to translate: the file as it was
    bom = "\ufeff" if data.startswith(codecs.BOM_UTF8) and charset == "utf-8" else ""
    return (bom + out).encode(charset, errors="xmlcharrefreplace")


def translate_html(text: str, translate: Translate) -> str:
    """An HTML page or fragment with every segment translated (module docstring)."""
    lxml_html = needs("lxml.html")
    whole = re.search(r"<!doctype|<html[\s>]", text, re.IGNORECASE) is not None
    try:
        root = (
            lxml_html.document_fromstring(text)
            if whole
            else lxml_html.fragment_fromstring(text, create_parent="div")
        )
    except Exception as error:  # lxml's parser errors have no common base class besides Exception
        raise UserError(f"the html file cannot be parsed ({error}); check that it is HTML") from None
    protected = Protected({e.tag for e in root.iter() if isinstance(e.tag, str)}, html=True)
    runs = _runs(root, translatable=True)
    if not runs:
        return text
    segments = [protected.for_model(_segment(run, protected)) for run in runs]
    translations = translated_in_place(translate, segments, "true", lines=[False] * len(segments))
    for run, translated in reversed(list(zip(runs, translations))):  # later runs first: indices stay valid
        _replace(run, protected.from_model(translated), protected, lxml_html)
    out = lxml_html.tostring(root, encoding="unicode", method="html") if whole else _inner_html(root)
    if _crlf(text):
        out = out.replace("\n", "\r\n")
    return _before_html(text) + out + _after_html(text) if whole else out


def _crlf(text: str) -> bool:
    """Whether the text's line breaks are all CR LF (the parser reads them as LF)."""
    return "\r\n" in text and text.count("\n") == text.count("\r\n")


def _decoded(data: bytes) -> tuple[str, str]:
    """(charset, text) of an HTML file: its BOM's, its <meta charset>'s, else UTF-8."""
    if data.startswith(codecs.BOM_UTF8):
        charset = "utf-8"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        charset = "utf-16"
    else:
        declared = _META_CHARSET.search(data[:4096])
        charset = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        name = codecs.lookup(charset).name
    except LookupError:
        raise UserError(
            f"the html file declares charset {charset!r}, which is unknown; declare utf-8"
        ) from None
    try:
        return name, data.decode("utf-8-sig" if name == "utf-8" else name)
    except UnicodeDecodeError as error:
        shown = "UTF-8" if name == "utf-8" else f"{charset} (its declared charset)"
        raise UserError(
            f"the html file is not valid {shown} (byte {error.start}); convert it to UTF-8"
        ) from None


def _before_html(text: str) -> str:
    """What stood before <html> when it was only a doctype, comments and space: as it was; else the
    input's doctype alone (none when it had none)."""
    start = _HTML_START.search(text)
    head = _DOCTYPE_AND_COMMENTS.match(text).group()
    if start is not None and start.start() == len(head):
        return head.removeprefix("\ufeff")
    doctype = re.search(r"<!doctype[^>]*>", text, re.IGNORECASE)
    return doctype.group() + "\n" if doctype else ""


def _after_html(text: str) -> str:
    end = _HTML_END.search(text)
    return end.group()[end.group().index(">") + 1 :] if end else ""


def _inner_html(element: Any) -> str:
    """An element's content as HTML: its text escaped, its children HTML-serialized."""
    from lxml import html as lxml_html

    children = "".join(
        lxml_html.tostring(c, encoding="unicode", method="html", with_tail=True) for c in element
    )
    return html.escape(element.text or "", quote=False) + children


def _translatable(element: Any, inherited: bool) -> bool:
    value = element.get("translate")
    if value is None:
        return inherited
    return value.strip().lower() != "no"


def _is_kept(element: Any) -> bool:
    """Inside a segment: an element placed as one unit, its content untouched."""
    return element.tag.lower() in SKIPPED or not _translatable(element, True)


def _has_block(element: Any) -> bool:
    return any(isinstance(e.tag, str) and e.tag.lower() in BLOCKS for e in element.iter())


def _runs(element: Any, *, translatable: bool) -> list[_Run]:
    """The segments under `element`, in document order."""
    if not isinstance(element.tag, str) or element.tag.lower() in SKIPPED:
        return []
    translatable = _translatable(element, translatable)
    runs: list[_Run] = []
    start = 0
    for index, child in enumerate(list(element) + [None]):
        if child is not None and not (isinstance(child.tag, str) and _has_block(child)):
            continue  # inline: part of the run
        run = _Run(element, start, index)
        if translatable and _has_text(run):
            runs.append(run)
        if child is not None:
            runs += _runs(child, translatable=translatable)
        start = index + 1
    return runs


def _lead(run: _Run) -> str:
    return (run.parent.text if run.start == 0 else run.parent[run.start - 1].tail) or ""


def _has_text(run: _Run) -> bool:
    """Whether the run holds text to translate outside its kept elements."""
    texts = [_lead(run)]
    for child in run.parent[run.start : run.end]:
        texts += [_text_outside_kept(child), child.tail or ""]
    return any(text.strip() for text in texts)


def _text_outside_kept(element: Any) -> str:
    if not isinstance(element.tag, str) or _is_kept(element):
        return ""
    return (element.text or "") + "".join(_text_outside_kept(c) + (c.tail or "") for c in element)


def _segment(run: _Run, protected: Protected) -> str:
    """The run as markup, its kept elements swapped for placeholders."""
    from lxml import html as lxml_html

    for child in run.parent[run.start : run.end]:
        for element in _kept_in(child):
            run.kept.append(protected.swap(element))
    children = run.parent[run.start : run.end]
    serialized = "".join(
        lxml_html.tostring(c, encoding="unicode", method="html", with_tail=True) for c in children
    )
    return html.escape(_lead(run), quote=False) + serialized


def _kept_in(element: Any) -> list[Any]:
    """`element` or its outermost descendants that are kept as they are."""
    if not isinstance(element.tag, str):
        return []
    if _is_kept(element):
        return [element]
    return [kept for child in element for kept in _kept_in(child)]


def _replace(run: _Run, markup: str, protected: Protected, lxml_html: Any) -> None:
    """The run's text and children replaced by the translated `markup`'s."""
    container = lxml_html.fragment_fromstring(f"<div>{markup}</div>") if markup else lxml_html.Element("div")
    protected.restore(container, run.kept)
    parent = run.parent
    for child in parent[run.start : run.end]:
        parent.remove(child)
    if run.start == 0:
        parent.text = container.text
    else:
        parent[run.start - 1].tail = container.text
    for offset, child in enumerate(list(container)):
        parent.insert(run.start + offset, child)

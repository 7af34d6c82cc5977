"""format=xliff: XLIFF 1.2 and 2.x files, read and written with translate-toolkit (lxml underneath).

Each translatable unit (1.2's trans-unit, 2.x's segment) without a target gets one. A unit is
translatable unless the nearest of itself and its ancestors (unit, group, file) that has a `translate`
attribute says "no". Inline codes that carry native content or protect a span (1.2's <ph>, <bpt>, <ept>,
<it>, <bx>, <ex>; 2.x's <ph>, <sc>, <ec>, <cp>; <mrk translate="no"> and 1.2's <mrk mtype="protected">)
come back byte for byte, placed like tags (protected.py); <g>, <pc> and <mrk> keep their tags around the
translated words they hold; <x/> is a point. With xml:space="preserve" (on the source or an ancestor) a
target keeps the source's leading and trailing whitespace and its line breaks, and says
xml:space="preserve" itself when its source did; otherwise only the edges are kept. A unit's empty
<target/> is filled where it stands (its attributes kept), else the target follows the source (1.2: its
<seg-source>). Ids, notes, states of other units, comments and the rest of the file, its layout included,
are untouched. A file is written in its own encoding;
characters that encoding cannot hold become character references.
"""

from __future__ import annotations

import copy
import html
import logging
import re
from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.document_formats.protected import Protected
from seq2seq.inference.document_formats.segments import Translate, needs, translated_in_place

log = logging.getLogger(__name__)

XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
# Inline codes kept byte for byte, and the attribute that ties a span's start code to its end code.
KEPT = frozenset("ph bpt ept it bx ex sc ec cp".split())
_SPAN_STARTS = {"bpt": ("ept", ("rid", "id")), "bx": ("ex", ("rid", "id")), "sc": ("ec", ("id",))}
_END_KEYS = {"ept": ("rid", "id"), "ex": ("rid", "id"), "ec": ("startRef",)}
_ENCODING = re.compile(r"""\A\ufeff?<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9_.:-]+)["']""")


def translate_xliff_bytes(data: bytes, translate: Translate) -> bytes:
    store = _parsed(data)
    _translate_units(store, translate)
    return _serialized(store, data)


def translate_xliff(text: str, translate: Translate) -> str:
    """An XLIFF file given as text (its declared encoding says how its bytes would be written)."""
    declared = _ENCODING.match(text)
    encoding = declared.group(1) if declared else "utf-8"
    try:
        data = text.encode(encoding)
    except LookupError:
        raise UserError(
            f"the xliff file declares encoding {encoding!r}, which is unknown; declare UTF-8"
        ) from None
    except UnicodeEncodeError as error:
        raise UserError(
            f"the xliff file holds {text[error.start]!r}, which its declared encoding {encoding} cannot "
            "hold; declare UTF-8"
        ) from None
    store = _parsed(data)
    _translate_units(store, translate)
    return _serialized(store, data).decode(store.encoding)


def _parsed(data: bytes) -> Any:
    version_two = re.search(rb"<xliff[^>]*\bversion\s*=\s*[\"']2", data[:2000]) is not None
    storage = needs("translate.storage.xliff2" if version_two else "translate.storage.xliff")
    store_class = storage.Xliff2File if version_two else storage.xlifffile
    try:
        store = store_class.parsestring(data)
    except Exception as error:  # translate-toolkit raises lxml's and its own errors
        reason = str(error) or type(error).__name__
        raise UserError(
            f"the xliff file cannot be parsed ({reason}); check that it is XLIFF 1.2 or 2.x"
        ) from None
    return store


def _serialized(store: Any, data: bytes) -> bytes:
    """The file with its new targets in its own layout: what stands before and after the root element
    (declaration, BOM, comments, line breaks) as it was, the root as lxml parsed it (translate-toolkit's
    own writer re-indents), characters the file's encoding cannot hold as character references."""
    from lxml import etree

    root = etree.tostring(store.document.getroot(), encoding="unicode", with_tail=False)
    start = re.search(rb"<([\w.-]+:)?xliff[\s>/]", data)
    ends = list(re.finditer(rb"</([\w.-]+:)?xliff\s*>|/>\s*\Z", data))
    if start is None or not ends:  # not where we expect it: lxml's whole tree
        return etree.tostring(store.document, encoding=store.encoding, xml_declaration=True)
    body = root.encode(store.encoding, errors="xmlcharrefreplace")
    return data[: start.start()] + body + data[ends[-1].end() :]


def _translate_units(store: Any, translate: Translate) -> None:
    units = [
        u for u in store.unit_iter() if not u.isheader() and _translatable(u.xmlelement) and not u.target
    ]
    sources = [u.get_source_dom() for u in units]
    protected = Protected(_names(store), html=False)
    segments = [_segment(source, protected) for source in sources]
    preserved = [_preserves_space(source) for source in sources]  # such a target keeps its lines
    translations = translated_in_place(translate, [text for text, _ in segments], "true", lines=preserved)
    for unit, source, (_, kept), translated in zip(units, sources, segments, translations):
        _put_target(source, _target_element(source, protected.from_model(translated), unit, protected, kept))


def _put_target(source: Any, target: Any) -> None:
    """`target`'s content in the unit's empty <target> if it has one (its attributes, e.g. a state,
    kept), else `target` after the source (and after a 1.2 <seg-source>), as the schemas order them."""
    siblings = list(source.itersiblings())
    existing = next((e for e in siblings if _local(e) == "target"), None)
    if existing is not None:
        for child in list(existing):
            existing.remove(child)
        existing.text = target.text
        existing.extend(list(target))
        for name, value in target.attrib.items():
            existing.set(name, value)
        return
    anchor = next((e for e in siblings[:1] if _local(e) == "seg-source"), source)
    target.tail = anchor.tail
    anchor.addnext(target)


def _names(store: Any) -> set[str]:
    return {e.tag.rsplit("}", 1)[-1] for e in store.document.getroot().iter() if isinstance(e.tag, str)}


def _translatable(element: Any) -> bool:
    """The nearest `translate` attribute of the element and its ancestors decides (none: yes)."""
    for node in [element, *element.iterancestors()]:
        value = node.get("translate")
        if value is not None:
            return value.strip().lower() != "no"
    return True


def _preserves_space(element: Any) -> bool:
    for node in [element, *element.iterancestors()]:
        value = node.get(XML_SPACE)
        if value is not None:
            return value == "preserve"
    return False


def _local(element: Any) -> str:
    return element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""


def _is_kept(element: Any) -> bool:
    local = _local(element)
    if local == "mrk":
        return element.get("translate", "").lower() == "no" or element.get("mtype") == "protected"
    return local in KEPT


def _segment(source: Any, protected: Protected) -> tuple[str, list[int]]:
    """The source's content as markup for the search (its kept codes as placeholders) and their numbers."""
    from lxml import etree

    content = copy.deepcopy(source)
    kept: list[int] = []
    starts: dict[tuple[str, str], int] = {}  # (end code's name, key) -> the open span's number
    for element in _kept_in(content):
        local = _local(element)
        number = protected.swap(element)
        kept.append(number)
        key = _span_key(
            element, _SPAN_STARTS[local][1] if local in _SPAN_STARTS else _END_KEYS.get(local, ())
        )
        if key is None:
            continue
        if local in _SPAN_STARTS:
            starts[(_SPAN_STARTS[local][0], key)] = number
        elif (local, key) in starts:
            protected.pair(starts.pop((local, key)), number)
    namespace = source.tag[1 : source.tag.index("}")] if source.tag.startswith("{") else None
    children = "".join(etree.tostring(child, encoding="unicode", with_tail=True) for child in content)
    if namespace:
        children = children.replace(f' xmlns="{namespace}"', "")
    return protected.for_model(html.escape(content.text or "", quote=False) + children), kept


def _span_key(element: Any, attributes: tuple[str, ...]) -> str | None:
    return next((element.get(a) for a in attributes if element.get(a) is not None), None)


def _kept_in(element: Any) -> list[Any]:
    """The outermost kept codes below `element`, in document order."""
    found = []
    for child in element:
        if _is_kept(child):
            found.append(child)
        elif isinstance(child.tag, str):
            found += _kept_in(child)
    return found


def _target_element(source: Any, translated: str, unit: Any, protected: Protected, kept: list[int]) -> Any:
    """A <target> holding the translated markup, its codes elements again (the kept ones the originals)."""
    from lxml import etree

    namespace = source.tag[1 : source.tag.index("}")] if source.tag.startswith("{") else None
    opening = f'<target xmlns="{namespace}">' if namespace else "<target>"
    try:
        target = etree.fromstring(f"{opening}{translated}</target>")
    except etree.XMLSyntaxError:
        log.warning(
            "unit %s: its translation did not parse as markup; its codes follow its text", unit.getid()
        )
        target = etree.fromstring(f"{opening}</target>")
        target.text = re.sub(r"<[^>]*>", "", html.unescape(translated))
    protected.restore(target, kept)
    if source.get(XML_SPACE) is not None:
        target.set(XML_SPACE, source.get(XML_SPACE))
    return target

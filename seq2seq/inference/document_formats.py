"""Whole files in the formats translators work with (`format=`): an HTML page, an XLIFF 1.2 or 2.x file,
a gettext PO file. Each is read with a maintained library (lxml; translate-toolkit for XLIFF and PO: the
optional extra `documents`), its translatable segments are translated together in one Translator call
with markup (seq2seq.inference.markup_text: inline tags and codes go back around the right words; HTML
and XLIFF content is markup, a PO message is markup when it holds some), and the same file comes back
with the translations in place.

- html: the text of each block (a paragraph, heading, list item, table cell, title, ...: an element with
  text and no block inside) is one segment, inline tags and all; scripts, styles, code, pre and
  textarea are left as they are, and so are attributes.
- xliff: each translatable unit (not translate="no") without a target gets one, inline codes (<g>, <x/>,
  <ph>, <pc>, ...) kept; ids, notes, states of other units and the rest of the file are untouched.
- po: each message without a translation gets one (plural forms: the plural source's translation in
  every form after the first); the header, obsolete messages and messages already translated are kept.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

FORMATS = ("text", "html", "xliff", "po")
# HTML elements whose content is no text to translate, and those that hold blocks of text.
HTML_SKIPPED = frozenset("script style code pre textarea kbd samp var svg math template noscript".split())
HTML_BLOCKS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main nav ol p section summary table tbody td "
    "tfoot th thead title tr ul head option button label legend".split()
)

# (segments, markup mode) -> their translations: Translator.translate's texts, as markup="true" or "auto"
Translate = Callable[[Sequence[str], str], list[str]]


def check_format(value: Any) -> str:
    if value not in FORMATS:
        raise UserError(f"format={value!r} is not supported; choose {', '.join(FORMATS)}")
    return str(value)


def translate_document(data: bytes, fmt: str, translate: Translate) -> bytes:
    """The file `data` in format `fmt` (not "text") with its segments translated by `translate`."""
    handlers = {"html": _html, "xliff": _xliff, "po": _po}
    return handlers[check_format(fmt)](data, translate)


def _needs(module: str) -> Any:
    """An optional library, or a one-line UserError naming the extra that brings it."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise UserError(
            f"this format needs {module.split('.')[0]}: pip install 'seq2seq[documents]'"
        ) from None


def _decoded(data: bytes, fmt: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UserError(
            f"the {fmt} file is not valid UTF-8 (byte {error.start}); convert it to UTF-8"
        ) from None


# ---------------------------------------------------------------------------------------------- html
def _html(data: bytes, translate: Translate) -> bytes:
    lxml_html = _needs("lxml.html")
    text = _decoded(data, "html")
    whole = re.search(r"<!doctype|<html", text, re.IGNORECASE) is not None
    try:
        root = (
            lxml_html.document_fromstring(text)
            if whole
            else lxml_html.fragment_fromstring(text, create_parent="div")
        )
    except Exception as error:  # lxml's parser errors have no common base class besides Exception
        raise UserError(f"the html file cannot be parsed ({error})") from None
    blocks = _html_blocks(root)
    translations = translate([_inner_markup(block, namespace=None) for block in blocks], "true")
    for block, translated in zip(blocks, translations):
        _replace_inner_html(block, translated, lxml_html)
    if whole:
        doctype = root.getroottree().docinfo.doctype
        out = lxml_html.tostring(root, encoding="unicode", doctype=doctype or None)
    else:
        out = _inner_markup(root, namespace=None)
    return out.encode("utf-8")


def _html_blocks(element: Any) -> list[Any]:
    """The elements whose content is one segment: text, and no block element inside."""
    if not isinstance(element.tag, str) or element.tag.lower() in HTML_SKIPPED:
        return []
    inside = [e for e in element.iterdescendants() if isinstance(e.tag, str)]
    if not any(e.tag.lower() in HTML_BLOCKS for e in inside):
        return [element] if element.text_content().strip() else []
    return [block for child in element for block in _html_blocks(child)]


def _replace_inner_html(element: Any, markup: str, lxml_html: Any) -> None:
    for child in list(element):
        element.remove(child)
    parts = lxml_html.fragments_fromstring(markup) if markup.strip() else [markup]
    element.text = parts[0] if parts and isinstance(parts[0], str) else None
    for part in parts:
        if not isinstance(part, str):
            element.append(part)


def _inner_markup(element: Any, *, namespace: str | None) -> str:
    """An element's content as markup text: its text escaped, its children serialized (without the
    redundant declaration of the namespace they share with the element)."""
    from lxml import etree

    children = "".join(etree.tostring(child, encoding="unicode", with_tail=True) for child in element)
    if namespace:
        children = children.replace(f' xmlns="{namespace}"', "")
    return html.escape(element.text or "", quote=False) + children


# --------------------------------------------------------------------------------------------- xliff
def _xliff(data: bytes, translate: Translate) -> bytes:
    version_two = re.search(rb"<xliff[^>]*\bversion\s*=\s*[\"']2", data[:2000]) is not None
    storage = _needs("translate.storage.xliff2" if version_two else "translate.storage.xliff")
    store_class = storage.Xliff2File if version_two else storage.xlifffile
    try:
        store = store_class.parsestring(data)
    except Exception as error:  # translate-toolkit raises lxml's and its own errors
        raise UserError(f"the xliff file cannot be parsed ({error})") from None
    store.XMLindent = False  # the file's own layout: only the targets change
    units = [u for u in store.unit_iter() if not u.isheader() and u.istranslatable() and not u.target]
    sources = [u.get_source_dom() for u in units]
    translations = translate([_inner_markup(s, namespace=_namespace(s)) for s in sources], "true")
    for unit, source, translated in zip(units, sources, translations):
        unit.set_target_dom(_target_element(source, translated, unit))
    return bytes(store)


def _namespace(element: Any) -> str | None:
    match = re.match(r"\{(.*)\}", element.tag)
    return match.group(1) if match else None


def _target_element(source: Any, translated: str, unit: Any) -> Any:
    """A <target> holding the translated markup (its inline codes as elements again)."""
    from lxml import etree

    namespace = _namespace(source)
    opening = f'<target xmlns="{namespace}">' if namespace else "<target>"
    try:
        return etree.fromstring(f"{opening}{translated}</target>")
    except etree.XMLSyntaxError:
        log.warning("unit %s: its translation did not parse as markup; its codes are dropped", unit.getid())
        target = etree.fromstring(f"{opening}</target>")
        target.text = re.sub(r"<[^>]*>", "", html.unescape(translated))
        return target


# ------------------------------------------------------------------------------------------------ po
def _po(data: bytes, translate: Translate) -> bytes:
    pypo = _needs("translate.storage.pypo")
    multistring = _needs("translate.misc.multistring").multistring
    try:
        store = pypo.pofile.parsestring(data)
    except Exception as error:  # translate-toolkit's parser raises several kinds
        raise UserError(f"the po file cannot be parsed ({error})") from None
    units = [u for u in store.units if not u.isheader() and not u.isobsolete() and not u.istranslated()]
    forms = [list(u.source.strings) if u.hasplural() else [u.source] for u in units]
    flat = translate([text for texts in forms for text in texts], "auto")
    position = 0
    for unit, texts in zip(units, forms):
        done = flat[position : position + len(texts)]
        position += len(texts)
        if unit.hasplural():
            unit.target = multistring([done[0]] + [done[-1]] * (_plural_forms(store) - 1))
        else:
            unit.target = done[0]
    return bytes(store)


def _plural_forms(store: Any) -> int:
    """nplurals of the PO header's Plural-Forms (2 when it has none)."""
    count = store.getheaderplural()[0]
    return int(count) if count and str(count).isdigit() and int(count) >= 1 else 2

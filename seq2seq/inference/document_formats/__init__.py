"""Whole files in the formats translators work with (`format=`): an HTML page, an XLIFF 1.2 or 2.x file,
a gettext PO file. Each is read with a maintained library (lxml; translate-toolkit for XLIFF and PO: the
optional extra `documents`), its translatable segments are translated together in one Translator call
with markup (seq2seq.inference.markup_text: inline tags and codes go back around the right words; HTML
and XLIFF content is markup, a PO message is markup when it holds some), and the same file comes back
with the translations in place and everything else as it was.

A file comes as bytes (seq2seq-translate: read and written in the charset or encoding the file declares)
or as text (the server's JSON: already decoded; the answer is text too, its declaration unchanged unless
the translations need another charset, which a PO file then names).

segments.py     what goes to the Translator: the Translate callable; edge whitespace and lines kept
protected.py    inline content kept byte for byte and placed as one unit (code, native codes)
html_pages.py   format=html
xliff_files.py  format=xliff
po_files.py     format=po
"""

from __future__ import annotations

from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.document_formats.html_pages import translate_html, translate_html_bytes
from seq2seq.inference.document_formats.po_files import translate_po, translate_po_bytes
from seq2seq.inference.document_formats.segments import Translate
from seq2seq.inference.document_formats.xliff_files import translate_xliff, translate_xliff_bytes

FORMATS = ("text", "html", "xliff", "po")

__all__ = ["FORMATS", "Translate", "check_format", "translate_document", "translate_document_text"]


def check_format(value: Any) -> str:
    if value not in FORMATS:
        raise UserError(f"format={value!r} is not supported; choose {', '.join(FORMATS)}")
    return str(value)


def translate_document(data: bytes, fmt: str, translate: Translate) -> bytes:
    """The file `data` in format `fmt` (not "text") with its segments translated by `translate`."""
    handlers = {"html": translate_html_bytes, "xliff": translate_xliff_bytes, "po": translate_po_bytes}
    return handlers[check_format(fmt)](data, translate)


def translate_document_text(text: str, fmt: str, translate: Translate) -> str:
    """The file given as `text` (already decoded) in format `fmt` with its segments translated."""
    handlers = {"html": translate_html, "xliff": translate_xliff, "po": translate_po}
    return handlers[check_format(fmt)](text, translate)

"""format=po: gettext PO (and POT) files, read and written with translate-toolkit.

Each message without a translation gets one (plural forms: the plural source's translation in every form
after the first); the header, obsolete messages and messages that have a translation (fuzzy ones too: a
translator's draft is theirs) are kept. A message is translated line by line, each line's leading and
trailing whitespace kept, so its translation begins and ends with the line breaks its source has (as
`msgfmt -c` requires). A file is read in the charset its header declares and written in it; when a
translation holds a character that charset cannot hold, the file is written in UTF-8 and its header
says so (translate-toolkit's rule).
"""

from __future__ import annotations

from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.document_formats.segments import Translate, needs, translated_in_place


def translate_po_bytes(data: bytes, translate: Translate) -> bytes:
    store = _parsed(data)
    _translate_messages(store, translate)
    return bytes(store)


def translate_po(text: str, translate: Translate) -> str:
    """A PO file given as text (its header's charset says how its bytes would be written)."""
    store = _parsed(text)
    _translate_messages(store, translate)
    return bytes(store).decode(store.encoding)


def _parsed(data: bytes | str) -> Any:
    pypo = needs("translate.storage.pypo")
    try:
        return pypo.pofile.parsestring(data)
    except Exception as error:  # translate-toolkit's parser raises several kinds
        reason = str(error) or type(error).__name__
        raise UserError(f"the po file cannot be parsed ({reason}); check it with msgfmt -c") from None


def _untranslated(unit: Any) -> bool:
    if unit.isheader() or unit.isobsolete():
        return False
    target = unit.target
    strings = target.strings if hasattr(target, "strings") else [target]
    return not any(strings)


def _translate_messages(store: Any, translate: Translate) -> None:
    multistring = needs("translate.misc.multistring").multistring
    units = [u for u in store.units if _untranslated(u)]
    forms = [list(u.source.strings) if u.hasplural() else [u.source] for u in units]
    flat_forms = [text for texts in forms for text in texts]
    flat = translated_in_place(translate, flat_forms, "auto", lines=[True] * len(flat_forms))
    position = 0
    for unit, texts in zip(units, forms):
        done = flat[position : position + len(texts)]
        position += len(texts)
        if unit.hasplural():
            unit.target = multistring([done[0]] + [done[-1]] * (_plural_forms(store) - 1))
        else:
            unit.target = done[0]


def _plural_forms(store: Any) -> int:
    """nplurals of the PO header's Plural-Forms (2 when it has none)."""
    count = store.getheaderplural()[0]
    return int(count) if count and str(count).isdigit() and int(count) >= 1 else 2

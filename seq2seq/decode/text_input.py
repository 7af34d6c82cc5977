"""Reading text to translate: exact line accounting, strict or lenient UTF-8, control characters removed."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

from seq2seq.errors import UserError

ENCODING_POLICIES = ("strict", "replace")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0/C1 controls except tab and newline
_SPACES = re.compile(r"\s+")


def read_lines(source: str, *, encoding_errors: str = "strict") -> list[str]:
    """All lines of a file (or stdin for "-"); a final newline does not start an extra line.

    Invalid UTF-8 raises a UserError naming the file and line ("strict") or becomes U+FFFD ("replace").
    """
    if encoding_errors not in ENCODING_POLICIES:
        raise UserError(f"encoding_errors={encoding_errors!r} is not supported; choose strict or replace")
    name = "<stdin>" if source == "-" else source
    if source == "-":
        data = sys.stdin.buffer.read()
    else:
        path = Path(source)
        if not path.is_file():
            raise UserError(f"input file {source} does not exist; pass an existing file or - for stdin")
        data = path.read_bytes()
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            lines.append(raw.decode("utf-8", errors=encoding_errors))
        except UnicodeDecodeError as error:
            raise UserError(
                f"{name} line {number} is not valid UTF-8 (byte {error.start}); fix the file "
                "or pass encoding_errors=replace"
            ) from None
    return lines


def clean_line(text: str) -> str:
    """NFC-normalise, drop control characters (a tab or CR counts as a space), squeeze whitespace."""
    text = unicodedata.normalize("NFC", text.replace("\t", " ").replace("\r", " "))
    return _SPACES.sub(" ", _CONTROL.sub("", text)).strip()

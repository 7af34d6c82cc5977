"""Reading text to translate: exact line accounting, strict or lenient UTF-8, stdin or a file.

Unlike a training corpus, input to translate may be empty or come from stdin; each line is then
cleaned with the corpus reader's `normalize` (NFC, control characters removed, spaces squeezed).
"""

from __future__ import annotations

import sys
from pathlib import Path

from seq2seq.data.corpus import ENCODING_ERRORS as ENCODING_POLICIES
from seq2seq.data.corpus import normalize as clean_line
from seq2seq.errors import UserError

__all__ = ["clean_line", "read_lines"]


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

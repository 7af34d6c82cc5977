"""Reading text to translate or to score: exact line accounting, strict or lenient UTF-8, stdin or a file.

Unlike a training corpus (seq2seq.data.corpus), such text may be empty or come from stdin, and it is
read as it is: a leading byte-order mark and "\r" line ends are dropped, nothing else. Text to
translate is then cleaned with the corpus reader's `normalize` (NFC, control characters removed,
spaces squeezed), exported here as `clean_line`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from seq2seq.data.corpus import ENCODING_ERRORS as ENCODING_POLICIES
from seq2seq.data.corpus import normalize as clean_line
from seq2seq.errors import UserError

__all__ = ["clean_line", "read_text_lines"]


def read_text_lines(
    source: str | Path, *, encoding_errors: str = "strict", fix: str = "re-encode the file as UTF-8"
) -> list[str]:
    """All lines of a file (or stdin for "-"), without line ends; a final newline starts no extra line.

    Invalid UTF-8 raises a UserError naming the file, line and column, ending with `fix`
    ("strict"), or becomes U+FFFD ("replace").
    """
    if encoding_errors not in ENCODING_POLICIES:
        raise UserError(f"encoding_errors={encoding_errors!r} is not supported; choose strict or replace")
    name = "<stdin>" if str(source) == "-" else str(source)
    data = _read_bytes(source, name)
    try:
        text = data.decode("utf-8", errors=encoding_errors)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        byte = data[error.start]
        raise UserError(
            f"{name} line {line} is not valid UTF-8 (byte 0x{byte:02x} at column {column}); {fix}"
        ) from None
    text = text.removeprefix("\ufeff")  # a byte-order mark is not part of the first line
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return [line.removesuffix("\r") for line in lines]


def _read_bytes(source: str | Path, name: str) -> bytes:
    if str(source) == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except FileNotFoundError:
        raise UserError(f"{name} does not exist; pass an existing file (or - for stdin)") from None
    except IsADirectoryError:
        raise UserError(f"{name} is a directory; pass a text file with one sentence per line") from None
    except OSError as error:
        raise UserError(f"cannot read {name}: {error.strerror}") from None

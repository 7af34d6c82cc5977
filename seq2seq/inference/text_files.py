"""Text in and out, one line per line: a file, or - for stdin / stdout (a whole file as bytes for a
document format). What seq2seq-translate and seq2seq-qe read and write; a relative path is relative to
the working directory (the commands pass absolute ones)."""

from __future__ import annotations

import sys
from pathlib import Path

from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.text_input import read_text_lines


def read_lines(source: str, encoding_errors: str) -> list[str]:
    """The lines of `source` (- for stdin); invalid UTF-8 follows `encoding_errors` (strict | replace)."""
    return read_text_lines(
        source, encoding_errors=encoding_errors, fix="fix the file or pass encoding_errors=replace"
    )


def write_lines(target: str, lines: list[str]) -> None:
    """`lines` to stdout (-) or to the file `target`, replaced whole (atomically) once all are ready."""
    text = "".join(line + "\n" for line in lines)
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with atomic_output(Path(target), "w", encoding="utf-8") as stream:  # mode from the umask
        stream.write(text)


def read_bytes(source: str) -> bytes:
    """The bytes of `source` (- for stdin); a missing file is a UserError naming it."""
    if source == "-":
        return sys.stdin.buffer.read()
    path = Path(source)
    if not path.is_file():
        raise UserError(f"input={source}: no such file; pass an existing file or - for stdin")
    return path.read_bytes()


def write_bytes(target: str, data: bytes) -> None:
    """`data` to stdout (-) or to the file `target`, replaced whole (atomically)."""
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with atomic_output(Path(target)) as stream:
        stream.write(data)


__all__ = ["read_bytes", "read_lines", "write_bytes", "write_lines"]

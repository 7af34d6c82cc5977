"""The input file of a corpus translation, read as the training corpus readers read it: counted, cut
into chunks of raw lines, and a chunk's lines decoded and normalised.

Lines are bytes until a chunk is read, so that a line with invalid UTF-8 is reported with its number,
or replaced (encoding_errors=replace) and counted; a last line without "\\n" is a line.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from seq2seq.data.corpus import decode_line, iter_raw_lines, normalize
from seq2seq.errors import UserError


def count_lines(path: Path) -> int:
    """Lines as iter_raw_lines yields them (a last line without "\\n" counts), read by it: a damaged or
    non-gzip .gz file, or one with no text, is its one-line error, raised before anything is written."""
    return sum(1 for _ in iter_raw_lines(path))


def input_chunks(path: Path, chunk_lines: int) -> Iterator[tuple[int, list[bytes]]]:
    """(index, raw lines) of each chunk of `chunk_lines` input lines, the last one shorter."""
    lines = iter_raw_lines(path)
    for index in itertools.count():
        raws = list(itertools.islice(lines, chunk_lines))
        if not raws:
            return
        yield index, raws


def read_chunk(raws: list[bytes], first: int, path: Path, encoding_errors: str) -> tuple[list[str], int, int]:
    """(normalised non-blank lines, blank lines, lines with invalid UTF-8 replaced); `first` is the
    number of the first line in the file `path`, for errors."""
    texts, empty, replaced = [], 0, 0
    for number, raw in enumerate(raws, start=first):
        try:
            text, damaged = decode_line(raw, path, number, encoding_errors)
        except UserError as error:  # its fix names the data config's key: ours is encoding_errors=
            where = str(error).split(";")[0]
            raise UserError(f"{where}; fix the file or pass encoding_errors=replace") from None
        text, replaced = normalize(text), replaced + damaged
        if text:
            texts.append(text)
        else:
            empty += 1
    return texts, empty, replaced


__all__ = ["count_lines", "input_chunks", "read_chunk"]

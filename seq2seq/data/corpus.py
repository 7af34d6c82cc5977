"""Read parallel text from any source: two aligned plain-text files (or .gz) or one TSV file, streamed.

Every reader yields normalised sentences (Unicode NFC, control characters removed, runs of
whitespace collapsed to one space), line by line, so a corpus of any size is read in constant
memory, and turns each way a file can be wrong into a one-line UserError that names the file,
and the line where there is one. Files whose names end in ".gz" are decompressed on the fly.
"""

from __future__ import annotations

import gzip
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

ENCODING_ERRORS = ("strict", "replace")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0/C1 controls other than tab and newline


def normalize(text: str) -> str:
    """NFC, no control characters, single spaces, no leading or trailing space.

    ASCII text is already NFC, and str.split() splits on exactly the characters regex `\\s` matches,
    so this is faster than NFC plus two regex substitutions (figures: benchmarks/results.md).
    """
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(_CONTROL.sub(" ", text).split())


def open_corpus_file(path: str | Path) -> IO[bytes]:
    """The file's bytes, decompressed when its name ends in .gz; a missing path is a one-line error."""
    file = Path(path)
    if not file.exists():
        raise UserError(f"{file}: no such file; check the path in the data config")
    if not file.is_file():
        raise UserError(f"{file} is not a file; the data config must name a text file")
    return gzip.open(file, "rb") if file.suffix == ".gz" else open(file, "rb")


def iter_raw_lines(path: str | Path) -> Iterator[bytes]:
    """The file's lines as bytes, without "\\n" (lines end at "\\n" only, as for `wc -l`) and without a
    leading byte-order mark. A file with no visible character is an error, raised after its last line."""
    with open_corpus_file(path) as handle:
        seen_text = False
        try:
            for number, raw in enumerate(handle, start=1):
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                if number == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")
                seen_text = seen_text or bool(raw.strip())
                yield raw
        except (OSError, EOFError) as error:  # a damaged .gz file
            raise UserError(f"{path}: cannot be read ({error}); check or re-download the file") from None
    if not seen_text:
        raise UserError(f"{path} is empty; a corpus file needs one sentence per line")


def decode_line(raw: bytes, path: str | Path, number: int, encoding_errors: str) -> tuple[str, int]:
    """The line's text, and 1 if invalid bytes were replaced ("replace") — "strict" raises instead."""
    try:
        return raw.decode("utf-8"), 0
    except UnicodeDecodeError as error:
        if encoding_errors == "strict":
            byte, column = raw[error.start], error.start + 1
            raise UserError(
                f"{path}:{number}: invalid UTF-8 (byte 0x{byte:02x} at column {column}); "
                "fix the file or set data.encoding_errors=replace"
            ) from None
        return raw.decode("utf-8", errors="replace"), 1


def check_policy(encoding_errors: str) -> None:
    if encoding_errors not in ENCODING_ERRORS:
        raise UserError(
            f"encoding_errors={encoding_errors!r} is not supported; use one of: {', '.join(ENCODING_ERRORS)}"
        )


def iter_corpus_lines(path: str | Path, *, encoding_errors: str = "strict") -> Iterator[str]:
    """Normalised lines of a UTF-8 text file, one at a time.

    With ``encoding_errors="strict"`` an invalid byte is an error naming the file and line;
    ``"replace"`` turns it into U+FFFD and counts the damaged lines in the log.
    """
    check_policy(encoding_errors)
    replaced = 0
    for number, raw in enumerate(iter_raw_lines(path), start=1):
        line, damaged = decode_line(raw, path, number, encoding_errors)
        replaced += damaged
        yield normalize(line)
    if replaced:
        log.warning("%s: replaced invalid UTF-8 in %d lines", path, replaced)


def iter_line_pairs(src: Iterable, tgt: Iterable, *, src_name: str | Path, tgt_name: str | Path) -> Iterator:
    """Zip two line streams of one parallel corpus; unequal lengths are a one-line error naming both."""
    src_lines, tgt_lines = iter(src), iter(tgt)
    count = 0
    for source in src_lines:
        target = next(tgt_lines, _END)
        if target is _END:
            _mismatch(src_name, count + 1 + sum(1 for _ in src_lines), tgt_name, count)
        count += 1
        yield source, target
    rest = sum(1 for _ in tgt_lines)
    if rest:
        _mismatch(src_name, count, tgt_name, count + rest)


_END = object()


def _mismatch(src: str | Path, src_count: int, tgt: str | Path, tgt_count: int) -> None:
    raise UserError(
        f"{src} has {src_count} lines but {tgt} has {tgt_count}; "
        "parallel files need exactly one translation per line"
    )


def iter_parallel(
    src: str | Path, tgt: str | Path, *, encoding_errors: str = "strict"
) -> Iterator[tuple[str, str]]:
    """Sentence pairs from two files, one sentence per line: line i of one translates line i of the other."""
    return iter_line_pairs(
        iter_corpus_lines(src, encoding_errors=encoding_errors),
        iter_corpus_lines(tgt, encoding_errors=encoding_errors),
        src_name=src,
        tgt_name=tgt,
    )


def read_parallel(
    src: str | Path, tgt: str | Path, *, encoding_errors: str = "strict"
) -> tuple[list[str], list[str]]:
    """All pairs of a (small) parallel corpus as two lists; see iter_parallel."""
    pairs = list(iter_parallel(src, tgt, encoding_errors=encoding_errors))
    return [s for s, _ in pairs], [t for _, t in pairs]


@dataclass
class FilterReport:
    """How many pairs a filter kept, and how many it removed for each reason."""

    kept: int = 0
    removed: Counter[str] = field(default_factory=Counter)

    def log(self, what: str) -> None:
        total = self.kept + sum(self.removed.values())
        reasons = ", ".join(f"{n} {reason}" for reason, n in self.removed.most_common()) or "none"
        log.info("%s: kept %d of %d pairs; removed: %s", what, self.kept, total, reasons)


@dataclass
class CorpusStats:
    """Sizes worth reporting about a corpus split, accumulated pair by pair (or chunk by chunk)."""

    pairs: int = 0
    empty_pairs: int = 0
    src_words: int = 0
    tgt_words: int = 0
    longest_line_words: int = 0

    def add(self, source: str, target: str) -> None:
        src_words, tgt_words = len(source.split()), len(target.split())
        self.pairs += 1
        self.empty_pairs += not source or not target
        self.src_words, self.tgt_words = self.src_words + src_words, self.tgt_words + tgt_words
        self.longest_line_words = max(self.longest_line_words, src_words, tgt_words)

    def merge(self, other: CorpusStats) -> None:
        self.pairs, self.empty_pairs = self.pairs + other.pairs, self.empty_pairs + other.empty_pairs
        self.src_words, self.tgt_words = self.src_words + other.src_words, self.tgt_words + other.tgt_words
        self.longest_line_words = max(self.longest_line_words, other.longest_line_words)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

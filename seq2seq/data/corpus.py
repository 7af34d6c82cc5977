"""Read parallel text from any source: two aligned plain-text files or one TSV file.

Every reader returns normalised sentences (Unicode NFC, control characters removed, runs of
whitespace collapsed to one space) and turns each way a file can be wrong into a one-line
UserError that names the file, and the line where there is one.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

ENCODING_ERRORS = ("strict", "replace")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0/C1 controls other than tab and newline
_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """NFC, no control characters, single spaces, no leading or trailing space."""
    text = _CONTROL.sub(" ", unicodedata.normalize("NFC", text))
    return _WHITESPACE.sub(" ", text).strip()


def read_lines(path: str | Path, *, encoding_errors: str = "strict") -> list[str]:
    """Normalised lines of a UTF-8 text file (a leading byte-order mark is ignored).

    With ``encoding_errors="strict"`` an invalid byte is an error naming the file and line;
    ``"replace"`` turns it into U+FFFD and counts the damaged lines in the log. Lines end at
    "\n" only, as for ``wc -l``, so both sides of a corpus are counted the same way.
    """
    _check_policy(encoding_errors)
    lines, replaced = [], 0
    for number, raw in enumerate(_raw_lines(path), start=1):
        line, damaged = _decode(raw, path, number, encoding_errors)
        lines.append(normalize(line))
        replaced += damaged
    if replaced:
        log.warning("%s: replaced invalid UTF-8 in %d lines", path, replaced)
    return lines


def read_parallel(
    src: str | Path, tgt: str | Path, *, encoding_errors: str = "strict"
) -> tuple[list[str], list[str]]:
    """Sentence pairs from two files, one sentence per line: line i of one translates line i of the other."""
    src_lines = read_lines(src, encoding_errors=encoding_errors)
    tgt_lines = read_lines(tgt, encoding_errors=encoding_errors)
    if len(src_lines) != len(tgt_lines):
        raise UserError(
            f"{src} has {len(src_lines)} lines but {tgt} has {len(tgt_lines)}; "
            "parallel files need exactly one translation per line"
        )
    return src_lines, tgt_lines


def read_tsv(
    path: str | Path, *, src_column: int = 0, tgt_column: int = 1, encoding_errors: str = "strict"
) -> tuple[list[str], list[str]]:
    """Sentence pairs from the given tab-separated columns of one file (extra columns are ignored)."""
    _check_policy(encoding_errors)
    needed = max(src_column, tgt_column) + 1
    src_lines, tgt_lines = [], []
    for number, raw in enumerate(_raw_lines(path), start=1):
        columns = _decode(raw, path, number, encoding_errors)[0].split("\t")
        if len(columns) < needed:
            raise UserError(
                f"{path}:{number}: expected at least {needed} tab-separated columns, found {len(columns)}; "
                "each line must hold a source and a target sentence"
            )
        src_lines.append(normalize(columns[src_column]))
        tgt_lines.append(normalize(columns[tgt_column]))
    return src_lines, tgt_lines


def _check_policy(encoding_errors: str) -> None:
    if encoding_errors not in ENCODING_ERRORS:
        raise UserError(
            f"encoding_errors={encoding_errors!r} is not supported; use one of: {', '.join(ENCODING_ERRORS)}"
        )


def _raw_lines(path: str | Path) -> list[bytes]:
    file = Path(path)
    if not file.exists():
        raise UserError(f"{file}: no such file; check the path in the data config")
    if not file.is_file():
        raise UserError(f"{file} is not a file; the data config must name a text file")
    data = file.read_bytes().removeprefix(b"\xef\xbb\xbf")
    if not data.strip():
        raise UserError(f"{file} is empty; a corpus file needs one sentence per line")
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the newline ending the last line does not start another
    return lines


def _decode(raw: bytes, path: str | Path, number: int, encoding_errors: str) -> tuple[str, int]:
    """The line's text, and 1 if invalid bytes were replaced."""
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


@dataclass
class FilterReport:
    """How many pairs a filter kept, and how many it removed for each reason."""

    kept: int = 0
    removed: Counter[str] = field(default_factory=Counter)

    def log(self, what: str) -> None:
        total = self.kept + sum(self.removed.values())
        reasons = ", ".join(f"{n} {reason}" for reason, n in self.removed.most_common()) or "none"
        log.info("%s: kept %d of %d pairs; removed: %s", what, self.kept, total, reasons)


def drop_empty_pairs(src: list[str], tgt: list[str], report: FilterReport) -> list[int]:
    """Indices of pairs with text on both sides; the others are counted in ``report``."""
    kept = []
    for index, (source, target) in enumerate(zip(src, tgt)):
        if not source or not target:
            report.removed["empty"] += 1
        else:
            kept.append(index)
    report.kept = len(kept)
    return kept


def describe_parallel(src: list[str], tgt: list[str]) -> dict[str, int]:
    """Sizes worth reporting about a corpus split: pairs, empty pairs, words per side."""
    return {
        "pairs": len(src),
        "empty_pairs": sum(1 for s, t in zip(src, tgt) if not s or not t),
        "src_words": sum(len(s.split()) for s in src),
        "tgt_words": sum(len(t.split()) for t in tgt),
        "longest_line_words": max((len(x.split()) for x in src + tgt), default=0),
    }


def prepare_tsv(
    *,
    out_dir: str | Path,
    tsv: Mapping[str, str | None],
    src_lang: str,
    tgt_lang: str,
    src_column: int = 0,
    tgt_column: int = 1,
    encoding_errors: str = "strict",
    force: bool = False,
    progress: bool = True,
) -> dict[str, dict[str, int]]:
    """Split TSV files (``tsv``: split name -> path) into ``{split}.{src_lang}`` and ``{split}.{tgt_lang}``.

    The files are rewritten on every call (it is cheap), so ``force`` and ``progress`` change
    nothing; they exist because every recipe takes them.
    """
    del force, progress
    out = Path(out_dir)
    stats = {}
    for split in ("train", "dev", "test"):
        path = tsv.get(split)
        if path is None:
            if split != "test":
                raise UserError(f"data.tsv.{split} is not set; give the path of the {split} TSV file")
            continue
        src, tgt = read_tsv(
            path, src_column=src_column, tgt_column=tgt_column, encoding_errors=encoding_errors
        )
        out.mkdir(parents=True, exist_ok=True)
        for lang, lines in ((src_lang, src), (tgt_lang, tgt)):
            temporary = out / f"{split}.{lang}.{os.getpid()}.tmp"
            temporary.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            temporary.replace(out / f"{split}.{lang}")
        stats[split] = describe_parallel(src, tgt)
        log.info("%s: wrote %d pairs to %s", path, len(src), out / f"{split}.{{{src_lang},{tgt_lang}}}")
    return stats

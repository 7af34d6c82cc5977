"""The QE corpus: one `source <TAB> translation <TAB> label` line per example, UTF-8.

Written by seq2seq-qe-data, read by seq2seq-qe-train. A label is a number in [0, 1] (seq2seq.qe.labels).
A line that is not three fields, a label that is not a number in [0, 1], or invalid UTF-8 is a one-line
error naming the file and line; an empty source or translation is skipped and counted (the model
cannot score what is not there).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.text_input import clean_line, read_text_lines

log = logging.getLogger(__name__)
# Beside a QE corpus, the translation model's tokenizers (a joint one: the source file alone), with
# which seq2seq-qe-train's model reads; seq2seq-qe-data writes them.
TOKENIZER_FILES = {"src": "tokenizer.src.model", "tgt": "tokenizer.tgt.model"}


@dataclass
class QECorpus:
    """Parallel lists: sources, translations and their labels."""

    sources: list[str]
    translations: list[str]
    labels: list[float]

    def __len__(self) -> int:
        return len(self.labels)


def write_qe_corpus(path: Path, rows: Iterable[tuple[str, str, float]]) -> int:
    """Write (source, translation, label) rows atomically; returns how many. Tabs inside a text become
    spaces (the field separator cannot appear in a field)."""
    count = 0
    with atomic_output(Path(path), "w", encoding="utf-8") as stream:
        for source, translation, label in rows:
            fields = [source.replace("\t", " "), translation.replace("\t", " "), f"{label:.6f}"]
            stream.write("\t".join(fields) + "\n")
            count += 1
    return count


def read_qe_corpus(path: str | Path, *, encoding_errors: str = "strict") -> QECorpus:
    """The corpus in `path`; see the module docstring for what is refused and what is skipped."""
    lines = read_text_lines(path, encoding_errors=encoding_errors, fix="fix the file or write it again")
    corpus = QECorpus([], [], [])
    skipped = 0
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) != 3:
            raise UserError(f"{path} line {number} has {len(fields)} tab-separated fields, not 3 "
                            "(source, translation, label); write it with seq2seq-qe-data")  # fmt: skip
        source, translation, label = clean_line(fields[0]), clean_line(fields[1]), _label(fields[2])
        if label is None:
            raise UserError(f"{path} line {number}: label {fields[2]!r} is not a number from 0 to 1")
        if not source or not translation:
            skipped += 1
            continue
        corpus.sources.append(source)
        corpus.translations.append(translation)
        corpus.labels.append(label)
    if skipped:
        log.warning("%s: %d line(s) with an empty source or translation skipped", path, skipped)
    if not corpus.labels:
        raise UserError(
            f"{path} holds no example with a source and a translation; make it with seq2seq-qe-data"
        )
    return corpus


def _label(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None


__all__ = ["QECorpus", "read_qe_corpus", "write_qe_corpus"]

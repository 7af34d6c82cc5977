"""Making a QE corpus from data the user already has: a parallel corpus and translation checkpoints.

Each *pass* translates a set of sources with one checkpoint and one search (greedy, beam or sampling);
every output is labelled with its sentence-level chrF (or TER) against the reference; the passes' rows
together are the QE corpus. Outputs of varied quality are what a QE model learns from: several
checkpoints (an early one translates worse) and sampling give them.

Memorisation. A model translates the sentences it was trained on better than new ones, so a QE model
trained only on such outputs would learn too rosy a picture. The recipe (docs/quality-estimation.md)
therefore translates the training sources with early checkpoints and with sampling, whose outputs are
far from the references, and labels the dev set with the final model, which never trained on it; the
labels' means per pass are written to the summary so the gap can be seen.

Each pass's translations are kept in `<output_dir>/passes/` beside a record of what made them (the
checkpoint's size and time, the sources' hash, the search, the precision); a rerun reuses a pass only
when that record matches, so an interrupted run resumes pass by pass and a changed setting is never
answered by old files.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from seq2seq.data.binarize import file_digest
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.text_input import read_text_lines

log = logging.getLogger(__name__)

SEARCHES = ("greedy", "beam", "sample")


def search_options(name: str, *, seed: int) -> SearchOptions:
    """The search a pass names: greedy (configs/decode/greedy.yaml), beam (beam.yaml: beam 5) or sample
    (sample.yaml: one sample from the model's distribution, seeded)."""
    if name == "greedy":
        return SearchOptions()
    if name == "beam":
        return DEFAULT_OPTIONS
    if name == "sample":
        return SearchOptions(sampling=True, seed=seed)
    raise UserError(f"decode={name!r} in a QE pass is not supported; choose {', '.join(SEARCHES)}")


@dataclass(frozen=True)
class Pass:
    """One translation of `split`'s sources by `checkpoint` with the search `decode`."""

    split: str
    index: int
    checkpoint: Path
    decode: str

    @property
    def name(self) -> str:
        return f"{self.split}.{self.index}"


def read_pairs(source: Path, reference: Path, *, limit: int | None) -> tuple[list[str], list[str]]:
    """The first `limit` lines (all for None) of two line-aligned files; unequal line counts are refused."""
    sources = read_text_lines(source, fix="fix the file")
    references = read_text_lines(reference, fix="fix the file")
    if len(sources) != len(references):
        raise UserError(f"{source} has {len(sources)} lines but {reference} has {len(references)}; "
                        "pass line-aligned source and reference files")  # fmt: skip
    if limit is not None:
        sources, references = sources[:limit], references[:limit]
    return sources, references


def pass_record(one: Pass, source: Path, *, limit: int | None, seed: int, precision: str) -> dict[str, Any]:
    """What made a pass's translations: a rerun reuses them only when this is unchanged. The precision
    is part of it (bf16 translates otherwise than fp32); the device and the batch size are not: as for
    seq2seq-backtranslate, they change the speed (and which valid sample a sampling pass draws)."""
    stat = one.checkpoint.stat()
    return {
        "checkpoint": str(one.checkpoint.resolve()),
        "checkpoint_bytes": stat.st_size,
        "checkpoint_mtime_ns": stat.st_mtime_ns,
        "sources_sha256": file_digest(source),
        "limit": limit,
        "search": asdict(search_options(one.decode, seed=seed + one.index)),
        "precision": precision,
    }


def run_pass(
    one: Pass,
    sources: Sequence[str],
    record: dict[str, Any],
    directory: Path,
    translate: Callable[[Pass, Sequence[str]], list[str]],
) -> list[str]:
    """The pass's translations: reused from `directory` when its record matches, else made and saved."""
    outputs, saved = directory / f"{one.name}.txt", directory / f"{one.name}.json"
    if outputs.is_file() and saved.is_file():
        if json.loads(saved.read_text()) == record:
            lines = read_text_lines(outputs)
            if len(lines) == len(sources):
                log.info("pass %s: reusing %s (same checkpoint, sources and search)", one.name, outputs)
                return lines
        log.info("pass %s: %s was made with other settings; translating again", one.name, outputs)
    translations = translate(one, sources)
    directory.mkdir(parents=True, exist_ok=True)
    saved.unlink(missing_ok=True)  # the record goes last: outputs without one are never reused
    with atomic_output(outputs, "w", encoding="utf-8") as stream:
        stream.write("".join(line.replace("\n", " ") + "\n" for line in translations))
    with atomic_output(saved, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(record, indent=2))
    return translations


def tokenizer_digest(payload: dict[str, Any]) -> str:
    """One hash of a checkpoint's tokenizer bytes (source, and target when separate)."""
    digest = hashlib.sha256(payload["src"])
    digest.update(payload.get("tgt") or b"")
    return digest.hexdigest()


__all__ = ["SEARCHES", "Pass", "pass_record", "read_pairs", "run_pass", "search_options", "tokenizer_digest"]

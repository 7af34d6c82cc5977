"""What a corpus translation run records: its settings fingerprint (<command>.json, compared on a rerun)
and its report (report.json: counts, time, speed, settings)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from seq2seq.corpus_translation.output_dir import REPORT_FILE, ChunkStats
from seq2seq.corpus_translation.settings import CorpusSettings
from seq2seq.data.binarize import file_digest
from seq2seq.files import atomic_output
from seq2seq.inference.translator import Translator


def checkpoint_digest(path: Path) -> str:
    """sha256 of a checkpoint file; of an exported directory, over its files' names and sha256s."""
    if path.is_file():
        return file_digest(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(f"{file.name}\t{file_digest(file)}\n".encode())
    return digest.hexdigest()


def fingerprint(translator: Translator, settings: CorpusSettings, langs: tuple[str, str]) -> dict:
    """What decides the corpus's bytes (compared on a rerun), and where the files were (not compared:
    a moved file with the same bytes still resumes). Left out: max_tokens and device, which change the
    speed (and the draws of a sampled chunk, which stays a valid sample), and encoding_errors: a chunk
    done with strict holds no invalid bytes, so replace gives the same bytes and may finish the run.
    One model is recorded as a string, an ensemble as a list (in its order, which the search keeps).
    `langs`: the corpus's (source side, target side) suffixes."""
    digests = [checkpoint_digest(path) for path in settings.checkpoints]
    paths = [str(path) for path in settings.checkpoints]
    one = len(settings.checkpoints) == 1
    return {
        "settings": {
            "input_sha256": file_digest(settings.input),
            "checkpoint_sha256": digests[0] if one else digests,
            "engine": translator.engine.name,
            "precision": settings.precision,
            "quantization": settings.quantization,
            "decode": dataclasses.asdict(translator.options),
            "chunk_lines": settings.chunk_lines,
            "max_input_tokens": translator.max_input_tokens,
            "long_lines": translator.long_lines,
            "langs": {"src": langs[0], "tgt": langs[1]},
            # lines with tags or placeholders translate differently with markup handling (markup_text)
            "markup": translator.markup,
            "placeholders": translator.markup_pattern.pattern,
        },
        "input": str(settings.input),
        "checkpoint": paths[0] if one else paths,
    }


def summary(
    translator: Translator, settings: CorpusSettings, chunks: Sequence[ChunkStats], resumed: int,
    outputs: dict[str, Path], wall: float,
) -> dict[str, Any]:  # fmt: skip
    """report.json: the counts, the translation time summed over chunks (this run's and any earlier
    run's, model loading and file passes apart), the speed and the settings."""
    sentences = sum(c.pairs + c.untranslated for c in chunks)
    seconds = sum(c.seconds for c in chunks)
    paths = [str(path) for path in settings.checkpoints]
    return {
        "input": str(settings.input), "checkpoint": paths[0] if len(paths) == 1 else paths,
        "engine": translator.engine.name, "device": str(translator.device),
        "precision": settings.precision, "quantization": settings.quantization,
        "decode": dataclasses.asdict(translator.options), "chunk_lines": settings.chunk_lines,
        "max_tokens": settings.max_tokens, "threads": torch.get_num_threads(),
        "lines": sum(c.lines for c in chunks), "sentences": sentences,
        "pairs": sum(c.pairs for c in chunks), "empty_lines": sum(c.empty for c in chunks),
        "empty_translations": sum(c.untranslated for c in chunks),
        "replaced_lines": sum(c.replaced for c in chunks), "chunks": len(chunks), "chunks_resumed": resumed,
        "seconds": seconds, "sentences_per_second": sentences / max(seconds, 1e-9), "wall_seconds": wall,
        "outputs": {name: str(path) for name, path in outputs.items()},
    }  # fmt: skip


def write_report(report: dict[str, Any], directory: Path) -> Path:
    """report.json in `directory`, written whole (a temporary file renamed); its path."""
    path = directory / REPORT_FILE
    with atomic_output(path, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(report, indent=2) + "\n")
    return path


def log_skipped(log: logging.Logger, report: dict[str, Any]) -> None:
    """The input lines that gave no pair, if any: blank ones, and those whose translation was empty."""
    if report["empty_lines"]:
        log.info("skipped %d blank input lines (no pair)", report["empty_lines"])
    if report["empty_translations"]:
        log.warning("skipped %d lines whose translation came out empty", report["empty_translations"])


__all__ = ["checkpoint_digest", "fingerprint", "log_skipped", "summary", "write_report"]

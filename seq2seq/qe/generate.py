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

The Python API, the one under seq2seq-qe-data (which only reads its config):

    from seq2seq import Translator
    from seq2seq.qe.generate import Pass, QeDataSettings, make_qe_data

    settings = QeDataSettings(
        output_dir="runs/qe_data", train_source="train.en", train_reference="train.es",
        dev_source="dev.en", dev_reference="dev.es",
        train_passes=[("runs/quickstart/checkpoint_300.pt", "greedy"), ("runs/quickstart/best.pt", "sample")],
        dev_passes=[("runs/quickstart/best.pt", "beam")])
    summary = make_qe_data(settings, Translator.from_checkpoint)  # each checkpoint loaded once

Every pass translates through `Translator.translate`, the one translation path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from seq2seq.checkpoint import load_checkpoint
from seq2seq.data.binarize import file_digest
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.text_input import read_text_lines
from seq2seq.inference.translator import Translator
from seq2seq.model.families import ENCODER_DECODER, ENCODER_ONLY
from seq2seq.precision import check_precision
from seq2seq.qe.corpus import TOKENIZER_FILES, write_qe_corpus
from seq2seq.qe.labels import METRICS, sentence_labels

log = logging.getLogger(__name__)

SEARCHES = ("greedy", "beam", "sample")
SPLITS = ("train", "dev")


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


PassEntry = Pass | tuple[str | Path, str]  # a Pass, or (checkpoint, decode) of the next index


@dataclass(frozen=True)
class QeDataSettings:
    """What seq2seq-qe-data is told (configs/qe_data.yaml has the same names and defaults), checked when
    built. A pass may be given as (checkpoint, decode); it becomes Pass(split, its index, ...).
    `precision`: the one the Translators were loaded in (part of each pass's record). `progress_bar`:
    None shows one on a terminal."""

    output_dir: Path
    train_source: Path
    train_reference: Path
    dev_source: Path
    dev_reference: Path
    train_passes: tuple[Pass, ...]
    dev_passes: tuple[Pass, ...]
    max_train_sentences: int | None = None
    metric: str = "chrf"
    seed: int = 1
    precision: str = "fp32"
    max_tokens: int = 4096
    progress_bar: bool | None = None

    def __post_init__(self) -> None:
        for name in ("output_dir", "train_source", "train_reference", "dev_source", "dev_reference"):
            object.__setattr__(self, name, Path(getattr(self, name)))
        for split in SPLITS:
            name = f"{split}_passes"
            object.__setattr__(self, name, checked_passes(split, getattr(self, name)))
        if self.metric not in METRICS:
            raise UserError(f"metric={self.metric!r} is not supported; choose {' or '.join(METRICS)}")
        check_precision(self.precision)
        _check_integer(self.seed, "seed")
        _check_integer(self.max_tokens, "max_tokens", minimum=1)
        if self.max_train_sentences is not None:
            _check_integer(self.max_train_sentences, "max_train_sentences", minimum=1)

    def passes(self, split: str) -> tuple[Pass, ...]:
        return self.train_passes if split == "train" else self.dev_passes


def _check_integer(value: Any, setting: str, *, minimum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        least = "" if minimum is None else f" of at least {minimum}"
        raise UserError(f"{setting}={value!r} must be an integer{least}")


def checked_passes(split: str, entries: Sequence[PassEntry]) -> tuple[Pass, ...]:
    """`split`'s passes as Pass objects numbered in order, each checkpoint a file and search known."""
    if not entries:
        raise UserError(f"{split}_passes is empty; list at least one {{checkpoint: PATH, decode: greedy}}")
    passes = []
    for index, entry in enumerate(entries):
        one = entry if isinstance(entry, Pass) else Pass(split, index, Path(entry[0]), str(entry[1]))
        if (one.split, one.index) != (split, index):
            raise UserError(f"{split}_passes[{index}] is pass {one.name}; number a split's passes 0, 1, ...")
        if not one.checkpoint.is_file():
            raise UserError(f"{split}_passes[{index}].checkpoint={one.checkpoint} does not exist; "
                            "pass a .pt file written by seq2seq-train")  # fmt: skip
        search_options(one.decode, seed=0)  # a bad name fails here, before any translation
        passes.append(one)
    return tuple(passes)


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


def shared_tokenizers(passes: Sequence[Pass]) -> dict[str, Any]:
    """The tokenizer bytes of the passes' checkpoints: they must be one (the QE model reads with them)."""
    payloads = {}
    for one in passes:
        payload = load_checkpoint(one.checkpoint)
        if "tokenizer" not in payload:
            raise UserError(f"{one.checkpoint} holds no tokenizer; pass checkpoints written by seq2seq-train")
        family = (payload.get("model_config") or {}).get("family", ENCODER_DECODER)
        if family == ENCODER_ONLY:
            raise UserError(f"{one.checkpoint} is a QE model; the passes need translation checkpoints")
        payloads[one.checkpoint] = payload["tokenizer"]
    first = passes[0].checkpoint
    for path, payload in payloads.items():
        if tokenizer_digest(payload) != tokenizer_digest(payloads[first]):
            raise UserError(f"{first} and {path} use different tokenizers; take every pass's checkpoint from "
                            "one training run")  # fmt: skip
    return payloads[first]


class PassTranslator:
    """Translates a pass's sources with its checkpoint's Translator (`load(checkpoint)`, called once per
    checkpoint), with a progress bar."""

    def __init__(self, load: Callable[[Path], Translator], settings: QeDataSettings) -> None:
        self.load, self.settings, self.translators = load, settings, {}

    def __call__(self, one: Pass, sources: Sequence[str]) -> list[str]:
        if one.checkpoint not in self.translators:
            self.translators[one.checkpoint] = self.load(one.checkpoint)
        translator = self.translators[one.checkpoint]
        options = search_options(one.decode, seed=self.settings.seed + one.index)
        show = self.settings.progress_bar
        bar = tqdm(total=len(sources), unit="sent", desc=f"pass {one.name} ({one.decode})",
                   file=sys.stderr, disable=not (sys.stderr.isatty() if show is None else show))  # fmt: skip
        start = time.perf_counter()
        translations = translator.translate(sources, options=options, max_tokens=self.settings.max_tokens,
                                            on_batch=bar.update)  # fmt: skip
        bar.close()
        seconds = time.perf_counter() - start
        log.info("pass %s: %d sentences with %s in %.0f s (%.1f sentences/s)", one.name, len(sources),
                 options.describe(), seconds, len(sources) / max(seconds, 1e-9))  # fmt: skip
        return [t.text for t in translations]


def make_qe_data(settings: QeDataSettings, load: Callable[[Path], Translator]) -> dict[str, Any]:
    """Every pass run (or reused), its outputs labelled, train.tsv and dev.tsv written beside the passes'
    tokenizer and summary.json; the summary. `load(checkpoint)`: a pass checkpoint's Translator."""
    out = settings.output_dir
    tokenizers = shared_tokenizers(settings.train_passes + settings.dev_passes)
    translate = PassTranslator(load, settings)
    summary: dict[str, Any] = {"metric": settings.metric, "passes": []}
    for split in SPLITS:
        summary[f"{split}_pairs"] = write_split(settings, split, translate, summary["passes"])
    for side, name in TOKENIZER_FILES.items():  # a joint tokenizer has no target file: none may be left over
        if tokenizers.get(side):
            (out / name).write_bytes(tokenizers[side])
        else:
            (out / name).unlink(missing_ok=True)
    with atomic_output(out / "summary.json", "w", encoding="utf-8") as stream:
        stream.write(json.dumps(summary, indent=2))
    return summary


def write_split(
    settings: QeDataSettings, split: str, translate: PassTranslator, records: list[dict[str, Any]]
) -> int:
    """`split`.tsv: every pass's labelled rows (pairs with an empty side left out); how many. Each pass's
    record is appended to `records`."""
    source, reference = getattr(settings, f"{split}_source"), getattr(settings, f"{split}_reference")
    limit = settings.max_train_sentences if split == "train" else None
    sources, references = read_pairs(source, reference, limit=limit)
    rows: list[tuple[str, str, float]] = []
    for one in settings.passes(split):
        record = pass_record(one, source, limit=limit, seed=settings.seed, precision=settings.precision)
        translations = run_pass(one, sources, record, settings.output_dir / "passes", translate)
        labels = sentence_labels(translations, references, metric=settings.metric)
        labelled = zip(sources, translations, labels)
        rows += [(s, t, label) for s, t, label in labelled if s.strip() and t.strip()]
        mean = sum(labels) / max(len(labels), 1)
        records.append({
            "pass": one.name, "checkpoint": str(one.checkpoint), "decode": one.decode,
            "sentences": len(sources), "mean_label": mean,
        })  # fmt: skip
        log.info("pass %s: mean %s label %.3f", one.name, settings.metric, mean)
    path = settings.output_dir / f"{split}.tsv"
    written = write_qe_corpus(path, rows)
    log.info("wrote %s (%d pairs)", path, written)
    return written


__all__ = [
    "SEARCHES",
    "Pass",
    "QeDataSettings",
    "make_qe_data",
    "pass_record",
    "read_pairs",
    "run_pass",
    "search_options",
    "shared_tokenizers",
    "tokenizer_digest",
]

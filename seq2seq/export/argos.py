"""Export a checkpoint as an Argos Translate package: the .argosmodel file that argostranslate installs
(argostranslate.package.install_from_path) and LibreTranslate serves, offline.

The file is a zip of one directory, named as argospm names packages:

    translate-en_es-1_0/
      metadata.json          what argostranslate reads: type "translate", from_code / from_name, to_code /
                             to_name, package_version, argos_version
      README.md              what the package holds (argostranslate shows it as the description)
      model/                 the CTranslate2 model, written by seq2seq.export.ctranslate2 (without
                             pytorch.pt): argostranslate runs it with ctranslate2.Translator;
                             `seq2seq-translate checkpoint=<package>/model` reads it too
      sentencepiece.model    the one sentencepiece model that encodes the source and decodes the target
      minisbd/sentences.onnx the sentence splitter (seq2seq.export.argos_sentences)

argostranslate 1.11 translates a text paragraph by paragraph, each split into sentences first. Its
splitter is chosen by what the package holds: a minisbd/ folder (a MiniSBD model, run by onnxruntime)
before a stanza/ one (Stanza's tokenizer, which downloads its resources list when it starts); a package
with neither gets MiniSBD's trained model for the source language, downloaded on first use; spaCy only
with ARGOS_CHUNK_TYPE=SPACY, which tries to download xx_sent_ud_sm when argostranslate loads. So only a
minisbd/ folder works offline, and its file need not be a trained model: ours labels sentence ends by
punctuation rules for every language (argos_sentences says which), and needs no download at all.

What argostranslate cannot run is refused, by name, before anything is written: a decoder-only model
(it runs CTranslate2's Translator), what CTranslate2 cannot express, a tokenizer that is not one
sentencepiece model shared by both sides (it reads one sentencepiece.model for both), a multilingual
model (a package is one pair, and nothing puts a language token on its sources), and a model that
records no languages, unless src_lang / tgt_lang name them.

It searches with its own settings, not the model's tuned ones: beam size 4 (ARGOS_BEAM_SIZE),
CTranslate2's length penalty 0.2, at most 256 output tokens (so a model with fewer positions fails on a
sentence whose translation runs past them: a warning says so), unknown output tokens replaced by the
source token they attend to most; and its decoding turns every "_" of a translation into a space.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

import sentencepiece as spm
import torch

from seq2seq.errors import UserError
from seq2seq.export.argos_sentences import write_sentence_splitter
from seq2seq.export.ctranslate2 import export_ctranslate2, unsupported_settings
from seq2seq.files import temporary_path
from seq2seq.inference.api import LoadedModel, language_name, load_for_inference
from seq2seq.model import ENCODER_DECODER, family_of

log = logging.getLogger(__name__)

PACKAGE_VERSION = "1.0"
ARGOS_VERSION = "1.11"  # the argostranslate release whose layout this is (MiniSBD in the package)
ARGOS_MAX_OUTPUT = 256  # CTranslate2's default max_decoding_length, which argostranslate leaves as it is
METADATA, README, MODEL, SENTENCEPIECE = "metadata.json", "README.md", "model", "sentencepiece.model"
SPLITTER = Path("minisbd") / "sentences.onnx"
SUFFIX = ".argosmodel"
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


def export_argos(
    checkpoint: Path,
    output: Path,
    *,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    weight_format: str | None = None,
    force: bool = False,
) -> Path:
    """Write `output` (a new directory) holding one Argos Translate package, and return the package file.
    `src_lang`, `tgt_lang`: the package's language codes (default: those the checkpoint's training
    recorded, data.src_lang and data.tgt_lang); `weight_format` as for export_ctranslate2."""
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    problem = unsupported(loaded)
    if problem:
        raise UserError(f"an Argos Translate package cannot hold {problem}")
    source, target = package_languages(loaded, checkpoint, src_lang=src_lang, tgt_lang=tgt_lang)
    if output.exists() and any(output.iterdir()) and not force:
        raise UserError(
            f"{output} exists and is not empty; pass force=true to replace it or choose another output"
        )
    _warn_about_positions(loaded)
    name = f"translate-{source}_{target}-{PACKAGE_VERSION.replace('.', '_')}"
    temporary = temporary_path(output)
    try:
        with tempfile.TemporaryDirectory() as building:
            root = Path(building) / name
            root.mkdir()
            export_ctranslate2(checkpoint, root / MODEL, weight_format=weight_format, torch_weights=False,
                               languages=(source, target))  # fmt: skip
            (root / SENTENCEPIECE).write_bytes(loaded.src_tokenizer.to_bytes())
            (root / SPLITTER).parent.mkdir()
            write_sentence_splitter(root / SPLITTER, source)
            _write_metadata(root, loaded, checkpoint, source, target)
            temporary.mkdir(parents=True)
            _zip(root, temporary / f"{name}{SUFFIX}")
        if output.exists():
            shutil.rmtree(output)
        os.replace(temporary, output)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return output / f"{name}{SUFFIX}"


def unsupported(loaded: LoadedModel) -> str | None:
    """What of `loaded` an Argos Translate package cannot hold, in words; None when it can hold it all."""
    config = loaded.model.config
    if family_of(config) != ENCODER_DECODER:
        family = family_of(config).replace("_", "-")
        return (f"a {family} model: argostranslate runs CTranslate2's Translator, for encoder-decoder "
                "models; export it with target=ctranslate2")  # fmt: skip
    problems = unsupported_settings(config)
    if problems:
        return f"{problems[0]}, which CTranslate2 cannot express; export a model trained without it"
    source, target = loaded.src_tokenizer.to_bytes(), loaded.tgt_tokenizer.to_bytes()
    if not _is_sentencepiece(source) or not _is_sentencepiece(target):
        return ("a tokenizer that is not a sentencepiece model (an imported model's vocabulary): "
                "argostranslate tokenizes with one sentencepiece.model; export with "
                "target=ctranslate2")  # fmt: skip
    if source != target:
        return ("separate source and target tokenizers: argostranslate encodes and decodes with one "
                "sentencepiece.model; train with a joint tokenizer, or export with "
                "target=ctranslate2")  # fmt: skip
    codes = sorted({*loaded.src_tokenizer.languages, *loaded.tgt_tokenizer.languages})
    if codes:
        shown = ", ".join(codes[:5]) + (", ..." if len(codes) > 5 else "")
        return (f"a multilingual model (language tokens for {shown}): a package translates one pair, with "
                "no language token; export it with target=ctranslate2")  # fmt: skip
    return None


def package_languages(
    loaded: LoadedModel, checkpoint: Path, *, src_lang: str | None, tgt_lang: str | None
) -> tuple[str, str]:
    """(source, target) codes: those given, else those the checkpoint's training config recorded."""
    data = loaded.config.get("data") or {}
    chosen = {"src_lang": src_lang or data.get("src_lang"), "tgt_lang": tgt_lang or data.get("tgt_lang")}
    missing = [setting for setting, code in chosen.items() if not code]
    if missing:
        settings = " ".join(f"{setting}=CODE" for setting in missing)
        raise UserError(f"{checkpoint} records no {' or '.join(missing)}, which an Argos Translate package "
                        f"names; pass {settings} (e.g. src_lang=en tgt_lang=es)")  # fmt: skip
    for setting, code in chosen.items():
        if not _CODE.fullmatch(str(code)):
            raise UserError(f"{setting}={code!r} is not a language code: letters, digits and '-' (en, pt-BR)")
    if chosen["src_lang"] == chosen["tgt_lang"]:
        raise UserError(f"src_lang and tgt_lang are both {chosen['src_lang']!r}; name two languages")
    return str(chosen["src_lang"]), str(chosen["tgt_lang"])


def _is_sentencepiece(model: bytes) -> bool:
    try:
        spm.SentencePieceProcessor().LoadFromSerializedProto(model)
    except (RuntimeError, OSError, TypeError):
        return False
    return True


def _warn_about_positions(loaded: LoadedModel) -> None:
    config = loaded.model.config
    rows = int(config.get("max_positions", 1024))
    if config.get("positional") != "rope" and rows <= ARGOS_MAX_OUTPUT:
        log.warning("model.max_positions=%d: argostranslate lets a translation run to %d tokens, and "
                    "CTranslate2 fails on a sentence whose translation runs past %d", rows, ARGOS_MAX_OUTPUT,
                    rows - 1)  # fmt: skip


def _name(code: str) -> str:
    """The language's English name (Lingua's, with the `clean` extra), else its code."""
    try:
        return language_name(code)
    except UserError:  # Lingua is not installed
        return code


def _write_metadata(root: Path, loaded: LoadedModel, checkpoint: Path, source: str, target: str) -> None:
    names = {code: _name(code) for code in (source, target)}
    metadata = {
        "package_version": PACKAGE_VERSION, "argos_version": ARGOS_VERSION, "type": "translate",
        "from_code": source, "from_name": names[source], "to_code": target, "to_name": names[target],
        "links": [],
    }  # fmt: skip
    (root / METADATA).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    readme = (f"# {names[source]} -> {names[target]}\n\nA seq2seq model ({checkpoint.name}, training step "
              f"{loaded.step}) exported with seq2seq-export target=argos: model/ is CTranslate2's, "
              "sentencepiece.model its tokenizer for both sides, minisbd/ a rule-based sentence "
              "splitter.\n")  # fmt: skip
    (root / README).write_text(readme, encoding="utf-8")


def _zip(root: Path, path: Path) -> None:
    """`root` and everything under it, as the zip `path`'s one top-level directory."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(root.rglob("*")):
            archive.write(file, file.relative_to(root.parent).as_posix())


__all__ = ["ARGOS_MAX_OUTPUT", "SUFFIX", "export_argos", "package_languages", "unsupported"]

"""Reading a model directory written by `seq2seq-export` (the writer is seq2seq.export.ctranslate2).

<dir>/model.bin, config.json, *vocabulary*   CTranslate2's own files
<dir>/source.spm.model, target.spm.model     our sentencepiece models (one file, spm.model, when joint)
<dir>/seq2seq.json                           what a Translator needs besides: the model family (which
                                             CTranslate2 class runs it), step, limits, settings, and
                                             `tuned_decoding`, the model's tuned decoding if any
                                             (`decoding` in exports of earlier releases)
<dir>/pytorch.pt                             the model's weights as a seq2seq checkpoint (no optimizer
                                             state; unless exported with torch_weights=false): our
                                             engine searches the sentences with constraints on them
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_file
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY
from seq2seq.errors import UserError
from seq2seq.inference.engines import CTranslate2Engine, TorchFallback
from seq2seq.inference.generator_engine import CTranslate2DecoderOnlyEngine
from seq2seq.model.families import DECODER_ONLY, ENCODER_DECODER

METADATA_FILE = "seq2seq.json"
TORCH_WEIGHTS_FILE = "pytorch.pt"
FORMAT = "seq2seq-ctranslate2"
VERSION = 1
JOINT_TOKENIZER, SOURCE_TOKENIZER, TARGET_TOKENIZER = "spm.model", "source.spm.model", "target.spm.model"
# The engine that runs each family's export: CTranslate2's Translator, or its Generator.
FAMILY_ENGINES = {ENCODER_DECODER: CTranslate2Engine, DECODER_ONLY: CTranslate2DecoderOnlyEngine}


@dataclass
class ExportedModel:
    engine: CTranslate2Engine
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    step: int
    metadata: dict[str, Any]


def read_metadata(directory: Path) -> dict[str, Any]:
    """The export's seq2seq.json, checked, with what earlier releases wrote under other keys moved."""
    try:
        metadata = json.loads((directory / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise UserError(
            f"{directory} has no readable {METADATA_FILE}; export the model again with seq2seq-export"
        ) from None
    if metadata.get("format") != FORMAT or metadata.get("version") != VERSION:
        raise UserError(
            f"{directory}/{METADATA_FILE} is format {metadata.get('format')!r} version "
            f"{metadata.get('version')!r}, not {FORMAT} {VERSION}; export the model again with seq2seq-export"
        )
    if "decoding" in metadata:  # the tuned decoding's key in exports of earlier releases
        metadata.setdefault(PAYLOAD_KEY, metadata.pop("decoding"))
    # an export that records no family was written before decoder-only models: an encoder-decoder
    if metadata.setdefault("family", ENCODER_DECODER) not in FAMILY_ENGINES:
        raise UserError(
            f"{directory}/{METADATA_FILE} holds a {metadata['family']!r} model, which this version runs "
            f"only for {', '.join(FAMILY_ENGINES)}; upgrade seq2seq to translate with it"
        )
    return metadata


def load_exported(
    directory: Path,
    *,
    device: torch.device,
    precision: str = "fp32",
    quantization: str = "none",
    threads: int | None = None,
) -> ExportedModel:
    """The exported model in `directory` behind its family's CTranslate2 engine, with its tokenizers.
    quantization="int8" computes in int8 whatever the export's quantization (CTranslate2 converts the
    weights as it loads them); otherwise precision="bf16" computes in bfloat16, and "fp32" runs the
    weights as exported."""
    metadata = read_metadata(directory)
    if metadata["joint"]:
        src_tokenizer = tgt_tokenizer = tokenizer_from_file(directory / JOINT_TOKENIZER)
    else:
        src_tokenizer = tokenizer_from_file(directory / SOURCE_TOKENIZER)
        tgt_tokenizer = tokenizer_from_file(directory / TARGET_TOKENIZER)
    engine = FAMILY_ENGINES[metadata["family"]](
        directory, (src_tokenizer, tgt_tokenizer), device=device, threads=threads or torch.get_num_threads(),
        max_positions=int(metadata["max_positions"]),
        compute_type=_compute_type(precision, quantization),
    )  # fmt: skip
    weights = directory / metadata["torch_weights"] if metadata.get("torch_weights") else None
    engine.fallback = TorchFallback(weights, device=device, precision=precision)
    return ExportedModel(engine, src_tokenizer, tgt_tokenizer, int(metadata.get("step", 0)), metadata)


def _compute_type(precision: str, quantization: str) -> str:
    """CTranslate2's compute_type for our settings (int8 over bf16 when both are asked for)."""
    if quantization == "int8":
        return "int8_bfloat16" if precision == "bf16" else "int8"
    return "bfloat16" if precision == "bf16" else "default"

"""Which engine a Translator gets for the paths it is given, what that engine can run, and building it.

A directory written by seq2seq-export runs on CTranslate2, .pt checkpoints (one, or several: an ensemble)
on our PyTorch search; "auto" tells them apart. int8 quantization runs on CPU in fp32 with PyTorch's
dynamic kernels, or as CTranslate2's int8 compute type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.constraints import continuing_pieces
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.shortlist import Shortlist
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY, TunedDecoding
from seq2seq.errors import UserError
from seq2seq.inference.engines import Engine, TorchEngine, is_exported_model
from seq2seq.inference.exported import METADATA_FILE, load_exported
from seq2seq.inference.loading import load_ensemble
from seq2seq.nn.quantized import QUANTIZATIONS, int8_available, quantize_int8
from seq2seq.precision import resolve_precision

ENGINES = ("auto", "torch", "ctranslate2")


def check_quantization(quantization: str, *, engine: str, device: torch.device, precision: str) -> None:
    """A quantization this engine, device and precision can run, else a one-line error that says why."""
    if quantization not in QUANTIZATIONS:
        choices = " or ".join(QUANTIZATIONS)
        raise UserError(f"quantization={quantization!r} is not supported; choose {choices}")
    if quantization == "none" or engine == "ctranslate2":
        return
    if device.type != "cpu":
        raise UserError(f"quantization=int8 runs on CPU (PyTorch's dynamic int8 kernels have no "
                        f"{device.type} version); on a GPU use precision=bf16, or engine=ctranslate2 with "
                        "an exported model")  # fmt: skip
    if precision != "fp32":
        raise UserError(f"quantization=int8 cannot run with precision={precision}: its products are int8 and "
                        "the rest of the model fp32; use precision=fp32")  # fmt: skip
    if not int8_available():
        raise UserError("this PyTorch build has no dynamic int8 kernels; use quantization=none, or "
                        "engine=ctranslate2 with a model exported by seq2seq-export")  # fmt: skip


def engine_for(paths: list[Path], engine: str) -> str:
    if engine not in ENGINES:
        raise UserError(f"engine={engine!r} is not supported; choose {', '.join(ENGINES)}")
    if not paths:
        raise UserError("no checkpoint given; pass checkpoint=PATH (or a list of them for an ensemble)")
    exported = [p.is_dir() and is_exported_model(p) for p in paths]
    if len(paths) > 1 and any(exported):
        raise UserError("an ensemble takes .pt checkpoints, not exported models; pass the checkpoints")
    if engine == "auto":
        return "ctranslate2" if exported[0] else "torch"
    if engine == "ctranslate2" and not exported[0]:
        raise UserError(f"{paths[0]} is not a CTranslate2 model directory; make one with seq2seq-export")
    return engine


CTRANSLATE2_PENALTY = (
    " (tuned with our GNMT length penalty; CTranslate2 divides by length ** penalty, which ranks a little "
    "differently)"
)


@dataclass(frozen=True)
class BuiltEngine:
    """An engine and what came with it from the files: the tokenizers, the training step, the model's
    own tuned decoding (and where it was read from, for the log line), and the (source, target)
    languages its training config names (an exported model: those its export recorded, if any)."""

    engine: Engine
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    step: int
    tuned: TunedDecoding | None
    source: str
    languages: tuple[str, str] | None = None


def build_engine(
    paths: list[Path], *, engine: str, device: torch.device, precision: str, quantization: str,
    shortlist: str | Path | None, compile: str,
) -> BuiltEngine:  # fmt: skip
    """The engine for `paths` (engine_for): CTranslate2 on an exported directory, else our search on a
    checkpoint (or an ensemble of several), with int8 layers, a shortlist and a compiled step as asked.
    Settings the chosen engine cannot run are one-line UserErrors."""
    chosen = engine_for(paths, engine)
    if precision == "auto" and quantization == "int8" and chosen == "torch":
        precision = "fp32"  # PyTorch's int8 kernels compute the rest in fp32
    precision = resolve_precision(precision, device, key="precision")
    check_quantization(quantization, engine=chosen, device=device, precision=precision)
    if chosen == "ctranslate2" and shortlist is not None:
        raise UserError("shortlist= works with engine=torch; CTranslate2 has its own vocabulary map "
                        "(vmap.txt in the exported directory, use_vmap)")  # fmt: skip
    if chosen == "ctranslate2" and compile == "true":
        raise UserError("compile=true compiles our engine's decoder step; CTranslate2 runs its own "
                        "kernels: use compile=auto or false with an exported model")  # fmt: skip
    if chosen == "ctranslate2":
        exported = load_exported(paths[0], device=device, precision=precision, quantization=quantization)
        metadata = f"{paths[0] / METADATA_FILE}"
        tuned = TunedDecoding.read(exported.metadata.get(PAYLOAD_KEY), f"{metadata}{CTRANSLATE2_PENALTY}")
        recorded = exported.metadata.get("languages")  # the pair the export recorded, if any
        return BuiltEngine(exported.engine, exported.src_tokenizer, exported.tgt_tokenizer, exported.step,
                           tuned, metadata, tuple(recorded) if recorded else None)  # fmt: skip
    loaded = load_ensemble(paths, device)
    if quantization == "int8":
        quantize_int8(loaded.model)
    source = str(paths[0]) + (" (the first model of the ensemble)" if len(paths) > 1 else "")
    candidates = None
    if shortlist is not None:
        models = (loaded.src_tokenizer.to_bytes(), loaded.tgt_tokenizer.to_bytes())
        candidates = Shortlist.load(Path(shortlist), src_model=models[0], tgt_model=models[1])
    torch_engine = TorchEngine(
        loaded.model, SpecialIds.of(loaded.tgt_tokenizer), device=device, precision=precision,
        shortlist=candidates, compile=compile, quantization=quantization,
        continuing=continuing_pieces(loaded.tgt_tokenizer.pieces_of_vocabulary()),
    )  # fmt: skip
    return BuiltEngine(
        torch_engine,
        loaded.src_tokenizer,
        loaded.tgt_tokenizer,
        loaded.step,
        TunedDecoding.read(loaded.tuned_decoding, source),
        source,
        _languages(loaded.config),
    )


def _languages(config: dict[str, Any]) -> tuple[str, str] | None:
    """(source, target) language of a checkpoint's training config, when it names both."""
    data = config.get("data") or {}
    if data.get("src_lang") and data.get("tgt_lang"):
        return str(data["src_lang"]), str(data["tgt_lang"])
    return None


__all__ = [
    "CTRANSLATE2_PENALTY",
    "ENGINES",
    "BuiltEngine",
    "build_engine",
    "check_quantization",
    "engine_for",
]

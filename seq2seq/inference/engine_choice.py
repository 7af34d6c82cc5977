"""Which engine a Translator gets for the paths it is given, and what that engine can run.

A directory written by seq2seq-export runs on CTranslate2, .pt checkpoints (one, or several: an ensemble)
on our PyTorch search; "auto" tells them apart. int8 quantization runs on CPU in fp32 with PyTorch's
dynamic kernels, or as CTranslate2's int8 compute type.
"""

from __future__ import annotations

from pathlib import Path

import torch

from seq2seq.errors import UserError
from seq2seq.inference.engines import is_exported_model
from seq2seq.nn.quantized import QUANTIZATIONS, int8_available

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


__all__ = ["ENGINES", "check_quantization", "engine_for"]

"""The precisions a model runs in, the choice `auto` makes, and the one autocast context for them all.

Training, validation, tuning and every search (seq2seq-translate, the Translator, the server) build
their bf16 context here, so "bf16" means the same thing everywhere: `torch.autocast` to bfloat16 on the
model's device. Below decode and train in the import order, so both can use it.
"""

from __future__ import annotations

import logging
import os
from contextlib import AbstractContextManager, nullcontext

import torch

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16")  # what a model runs in, once `auto` is resolved
SETTINGS = ("auto", *PRECISIONS)  # what every precision setting may say: trainer.precision, translate's,
# serve's and seq2seq-qe's precision, a Translator's or a QualityEstimator's; auto is resolved where the
# device is known (resolve_precision)


# oneDNN ISA limits (ONEDNN_MAX_CPU_ISA) under which its kernels still use bf16 instructions
BF16_ONEDNN_ISAS = ("ALL", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX10_1_512", "AVX512_CORE_AMX",
                    "AVX512_CORE_AMX_FP16", "AVX10_1_512_AMX", "AVX10_1_512_AMX_FP16")  # fmt: skip


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matmuls run natively here (CUDA with bf16, or a CPU with AVX512-BF16 / AMX).

    On a CPU the instructions must also be allowed: `ATEN_CPU_CAPABILITY=avx2` or
    `ONEDNN_MAX_CPU_ISA=AVX2` (how an AVX-512 machine stands in for an AVX2 one) makes PyTorch's and
    oneDNN's kernels emulate bf16, as on a CPU without it.
    """
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if torch.backends.cpu.get_cpu_capability() != "AVX512":
        return False
    limit = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "ALL"
    if limit.strip().upper() not in BF16_ONEDNN_ISAS:
        return False
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def resolve_precision(setting: str, device: torch.device, *, key: str = "trainer.precision") -> str:
    """A precision setting as the model runs it on `device`. `auto`: bf16 autocast where the hardware
    runs it natively, else fp32 (emulated bf16 is slow): the same rule for training and inference.
    `key` names the setting in messages (translate's and serve's: "precision")."""
    check_precision(setting, key=key)
    if setting != "auto":
        return setting
    chosen = "bf16" if fast_bf16(device) else "fp32"
    log.info("%s=auto: using %s on %s", key, chosen, device)
    return chosen


def check_precision(setting: str, *, key: str = "precision") -> str:
    """A precision setting (auto | fp32 | bf16), checked before anything loads, else a one-line error.
    `auto` stays as it is: resolve_precision turns it into fp32 or bf16 once the device is known."""
    if setting not in SETTINGS:
        raise UserError(f"{key}={setting!r} is not supported; choose auto, fp32 or bf16")
    return setting


def autocast(precision: str, device: torch.device) -> AbstractContextManager:
    """bf16: `torch.autocast` to bfloat16 on the device's type; fp32: no context at all. `auto` must be
    resolved first (resolve_precision): only the caller knows the device it was meant for."""
    if precision not in PRECISIONS:
        raise UserError(f"precision={precision!r} is not a precision a model runs in; resolve auto with "
                        "seq2seq.precision.resolve_precision first, or choose fp32 or bf16")  # fmt: skip
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()

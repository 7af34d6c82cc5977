"""Which precision to train and validate in: fp32, or bf16 autocast where the hardware runs it natively."""

from __future__ import annotations

import logging
import os

import torch

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16")


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


def resolve_precision(setting: str, device: torch.device) -> str:
    """`auto`: bf16 autocast where the hardware runs it natively, else fp32 (emulated bf16 is slow)."""
    if setting not in PRECISIONS:
        raise UserError(f"trainer.precision={setting!r} is not supported; choose auto, fp32 or bf16")
    if setting != "auto":
        return setting
    chosen = "bf16" if fast_bf16(device) else "fp32"
    log.info("trainer.precision=auto: using %s on %s", chosen, device)
    return chosen

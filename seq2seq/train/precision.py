"""Which precision to train and validate in: fp32, or bf16 autocast where the hardware runs it natively."""

from __future__ import annotations

import logging

import torch

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16")


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matmuls run natively here (CUDA with bf16, or a CPU with AVX512-BF16 / AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
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

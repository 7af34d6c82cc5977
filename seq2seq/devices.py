"""The device a setting names (`device=auto|cpu|cuda|cuda:N`): one meaning in Python and every command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seq2seq.errors import UserError

if TYPE_CHECKING:
    import torch


def pick_device(name: str, *, setting: str = "device", local_rank: int = 0) -> torch.device:
    """The device a setting names. `auto`: this process's GPU when CUDA is available, else the CPU;
    `cuda` without an index: the GPU of this process's local rank (torchrun), so ranks never share GPU 0."""
    import torch  # here, so that commands without a model (seq2seq-score) start fast

    if name == "auto":
        return torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"{setting}={name!r} is not a device; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"{setting}={name} but no CUDA device is available; use {setting}=cpu")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", local_rank)
    return device


__all__ = ["pick_device"]

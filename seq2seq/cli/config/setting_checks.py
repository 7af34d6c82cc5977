"""Checks of the settings entry points share: the device, the progress bar, finite numbers."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from seq2seq.errors import UserError

if TYPE_CHECKING:
    import torch

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


def pick_device(name: str, *, setting: str = "device", local_rank: int = 0) -> torch.device:
    """The device a CLI setting names. `auto`: this process's GPU when CUDA is available, else the CPU;
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


def progress_bar_setting(value: Any, *, setting: str = "progress_bar") -> bool | None:
    """A progress-bar setting: True/False, or None for `auto` (the caller decides; usually: on a terminal)."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", "none", "null"):
        return False
    raise UserError(f"{setting}={value!r} is not a progress-bar setting; use auto, true or false")


def number_setting(
    value: Any, *, setting: str, kind: type = int, minimum: float = 0, maximum: float | None = None
) -> Any:
    """A numeric CLI setting as `kind` (int or float), finite and within [minimum, maximum]; else a
    one-line UserError. Hydra reads `inf` and `nan` as floats: a wait or a port of either would pass a
    plain comparison (nan compares false) and fail much later, far from the setting."""
    number = _finite_number(value, setting=setting, kind=kind)
    if number < minimum:
        raise UserError(f"{setting}={value!r} must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise UserError(f"{setting}={value!r} must be at most {maximum}")
    return number


def _finite_number(value: Any, *, setting: str, kind: type) -> int | float:
    what = "an integer" if kind is int else "a number"
    if isinstance(value, bool):
        raise UserError(f"{setting}={value!r} must be {what}")
    if kind is int and isinstance(value, int):
        return value
    try:
        real = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{setting}={value!r} must be {what}") from None
    if not math.isfinite(real):
        raise UserError(f"{setting}={value!r} must be a finite number")
    if kind is int and real != int(real):
        raise UserError(f"{setting}={value!r} must be {what}")
    return int(real) if kind is int else real

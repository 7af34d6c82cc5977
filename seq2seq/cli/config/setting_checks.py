"""Checks of the settings entry points share: the device, the progress bar, the log level, finite numbers."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any, TypeVar

from seq2seq.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


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


LOG_LEVELS = ("debug", "info", "warning", "error")  # the one verbosity setting's values, in every command


def log_level_setting(value: Any, *, setting: str = "log_level") -> int:
    """The logging level `log_level` names: one name and one set of values for every command's verbosity
    (quiet=true was log_level=warning)."""
    text = str(value).strip().lower()
    if text not in LOG_LEVELS:
        raise UserError(f"{setting}={value!r} is not a log level; use {', '.join(LOG_LEVELS)}")
    return int(getattr(logging, text.upper()))


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

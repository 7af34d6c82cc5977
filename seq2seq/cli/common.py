"""Shared plumbing for the entry points: config location, one-line errors, devices, progress-bar settings."""

from __future__ import annotations

import functools
import logging
import math
import os
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from seq2seq.errors import UserError

if TYPE_CHECKING:
    import torch

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


def config_dir() -> str:
    """Absolute path of the Hydra config tree: a directory, which `@hydra.main(config_path=...)` and
    `initialize_config_dir` both take.

    An installed wheel carries a copy of the repository's ``configs/`` as the package data
    ``seq2seq/configs`` (setup.py puts it there), found through importlib.resources. A source tree (the
    editable install, or the package on PYTHONPATH) has no such copy and uses the ``configs/`` beside the
    package, so that edits there apply at once.
    """
    package = resources.files("seq2seq")
    if not isinstance(package, Path):  # a zip archive: Hydra reads configs from a directory
        raise UserError(f"seq2seq is imported from an archive ({package}); install it with pip")
    package = package.resolve()
    for candidate in (package / "configs", package.parent / "configs"):
        if _is_config_tree(candidate):
            return str(candidate)
    raise UserError(
        f"no config tree found: neither the package data {package / 'configs'} (an installed wheel) nor "
        f"{package.parent / 'configs'} (a source checkout); reinstall seq2seq"
    )


def _is_config_tree(path: Path) -> bool:
    return (path / "train.yaml").is_file() and (path / "model").is_dir()


def exit_on_user_error(fn: F) -> F:
    """Print a UserError as one line on stderr and exit 2 instead of showing a traceback.

    A reader that stops early (`seq2seq-translate ... | head -1`) closes the pipe: exit 1 quietly, as
    other Unix tools do, rather than with a BrokenPipeError traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)
        except BrokenPipeError:
            os.dup2(
                os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno()
            )  # the exit flush must not fail again
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


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

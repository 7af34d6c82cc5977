"""Shared plumbing for the Hydra entry points: where configs live, and clean one-line errors."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from seq2seq.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


def config_dir() -> str:
    """Absolute path of the Hydra config tree.

    A source checkout (editable install) uses the repository's ``configs/``; an installed wheel
    carries the same tree as the package data ``seq2seq/configs``.
    """
    package_dir = Path(__file__).resolve().parents[1]
    for candidate in (package_dir.parent / "configs", package_dir / "configs"):
        if (candidate / "train.yaml").is_file() or (candidate / "data").is_dir():
            return str(candidate)
    raise UserError(f"no configs/ directory found next to {package_dir}; reinstall the package")


def exit_on_user_error(fn: F) -> F:
    """Print a UserError as one line on stderr and exit 2 instead of showing a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]

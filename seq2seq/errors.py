"""The one exception type for user mistakes (bad arguments, files, configs, checkpoints), and the one
warning line of a renamed setting.

UserError subclasses ValueError so library callers can catch it the usual way; the CLIs print its
one-line message without a traceback and exit non-zero. A renamed setting keeps its old name for one
release: using it gives `deprecation_message`'s line, as a DeprecationWarning for a Python keyword and as
a logged warning for a CLI key or a JSON field.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("seq2seq")


class UserError(ValueError):
    """A mistake the user can fix; the message names the problem and the fix in one line."""


def deprecation_message(old: str, new: str) -> str:
    """The one line every renamed setting gives when its old name is used."""
    return f"{old} is deprecated and will stop working in the next release; use {new}"


def warn_renamed_keyword(old: str, new: str, *, depth: int = 1) -> None:
    """A DeprecationWarning pointing at the code that passed the old keyword: the caller of the function
    `depth` calls above this one (1: the function that calls this)."""
    warnings.warn(deprecation_message(old, new), DeprecationWarning, stacklevel=2 + depth)


def log_renamed_field(old: str, new: str, *, logger: logging.Logger = log) -> None:
    """A logged warning for an old CLI key or JSON field."""
    logger.warning("%s", deprecation_message(old, new))


def renamed_attributes(module: str, renamed: Mapping[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """A module's `__getattr__` that still answers to names of the last release (old -> (new name, value)),
    each with the one deprecation line; any other unknown name is an AttributeError as usual."""

    def module_getattr(name: str) -> Any:
        if name not in renamed:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, value = renamed[name]
        warn_renamed_keyword(name, new)
        return value

    return module_getattr

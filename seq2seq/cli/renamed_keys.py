"""Config keys that were renamed: a command-line override of the old key is a one-line error naming the new
one (Hydra's own error only says the key is unknown, in five lines).

    @refuse_renamed_keys({"max_batch_tokens": "max_tokens"})
    @hydra.main(...)
    def main(cfg): ...
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def renamed_key_error(overrides: Sequence[str], renamed: Mapping[str, str]) -> str | None:
    """The error line for the first override (key=value, +key=value, ~key) of a renamed key, else None."""
    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        if key in renamed:
            return f"{key} was renamed {renamed[key]}; use {renamed[key]}=... instead"
    return None


def refuse_renamed_keys(renamed: Mapping[str, str]) -> Callable[[F], F]:
    """Check sys.argv for the old keys in `renamed` (old -> new) before Hydra composes the config."""

    def decorate(main: F) -> F:
        @functools.wraps(main)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if (error := renamed_key_error(sys.argv[1:], renamed)) is not None:
                print(f"error: {error}", file=sys.stderr)
                sys.exit(2)
            return main(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate

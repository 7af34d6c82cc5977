"""Config keys that were renamed, in two kinds, both checked in sys.argv before Hydra composes the config.

A refused key (its release of grace is over): a command-line override of it is a one-line error naming
the new key (Hydra's own error only says the key is unknown, in five lines).

    @refuse_renamed_keys({"max_batch_tokens": "max_tokens"})

A deprecated alias (renamed in this release): the old key still works for one release; its override is
rewritten to the new key, with one warning line saying so. Giving both keys is an error.

    @accept_deprecated_keys({"prefix": "prefixes"})
    @hydra.main(...)
    def main(cfg): ...
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from seq2seq.errors import UserError, deprecation_message

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


def _key_of(override: str) -> str:
    """The key an override (key=value, +key=value, ++key=value, ~key) sets."""
    return override.lstrip("+~").split("=", 1)[0]


def renamed_key_error(overrides: Sequence[str], renamed: Mapping[str, str]) -> str | None:
    """The error line for the first override (key=value, +key=value, ~key) of a renamed key, else None."""
    for override in overrides:
        key = _key_of(override)
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


def deprecated_key_overrides(
    overrides: Sequence[str], deprecated: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """`overrides` with each deprecated key (old -> new in `deprecated`) spelled by its new name, and the
    old keys that were used, in order. Both names in one command is a UserError: which value was meant?"""
    keys = {_key_of(override) for override in overrides}
    rewritten, used = [], []
    for override in overrides:
        key = _key_of(override)
        if key not in deprecated:
            rewritten.append(override)
            continue
        new = deprecated[key]
        if new in keys:
            raise UserError(f"{key}= and {new}= are the same setting; pass {new}= only")
        marks = override[: len(override) - len(override.lstrip("+~"))]
        rewritten.append(marks + new + override[len(marks) + len(key) :])
        used.append(key)
    return rewritten, used


def accept_deprecated_keys(deprecated: Mapping[str, str]) -> Callable[[F], F]:
    """Rewrite sys.argv's overrides of the old keys in `deprecated` (old -> new) to the new keys, with
    one warning line per old key, before Hydra composes the config."""

    def decorate(main: F) -> F:
        @functools.wraps(main)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                rewritten, used = deprecated_key_overrides(sys.argv[1:], deprecated)
            except UserError as error:
                print(f"error: {error}", file=sys.stderr)
                sys.exit(2)
            for key in dict.fromkeys(used):
                log.warning(deprecation_message(key, deprecated[key]))
            sys.argv[1:] = rewritten
            return main(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate

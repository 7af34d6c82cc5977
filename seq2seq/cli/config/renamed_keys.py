"""Config keys that were renamed, in two kinds, both checked in sys.argv before Hydra composes the config.

A refused key (its release of grace is over): a command-line override of it is a one-line error naming
the new key (Hydra's own error only says the key is unknown, in five lines).

    @refuse_renamed_keys({"max_batch_tokens": "max_tokens"})

A deprecated alias (renamed in this release): the old key still works for one release; its override is
rewritten to the new key, with one warning line saying so. Giving both keys is an error. Where the values
are spelled anew too, NewKeyAndValues maps them (quiet=true -> log_level=warning). A command's aliases
come from the one table of renamed settings, command_settings.OLD_NAMES:

    @accept_deprecated_keys(deprecated_keys("seq2seq-export"))
    @hydra.main(...)
    def main(cfg): ...
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from seq2seq.cli.config.command_settings import old_names
from seq2seq.errors import UserError, deprecation_message

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


@dataclass(frozen=True)
class NewKeyAndValues:
    """A deprecated key whose values are renamed too: `values` maps an old value (as typed, any case) to
    the new key's value, e.g. quiet -> log_level with {"true": "warning", "false": "info"}."""

    key: str
    values: Mapping[str, str]


Rename: TypeAlias = "str | NewKeyAndValues"  # the new key, or the new key and its values


def new_key(rename: Rename) -> str:
    """The key an old one became."""
    return rename if isinstance(rename, str) else rename.key


def deprecated_keys(command: str) -> dict[str, Rename]:
    """The old keys `command` (e.g. "seq2seq-export") accepts for one release, from command_settings'
    OLD_NAMES: every command reads its aliases from that one table, which the manual prints."""
    return {
        old.old: NewKeyAndValues(old.new, dict(old.values)) if old.values else old.new
        for old in old_names(command)
    }


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
    overrides: Sequence[str], deprecated: Mapping[str, Rename]
) -> tuple[list[str], list[str]]:
    """`overrides` with each deprecated key (old -> new in `deprecated`) spelled by its new name (and value),
    and the old keys that were used, in order. Both names in one command is a UserError: which value was
    meant?"""
    keys = {_key_of(override) for override in overrides}
    rewritten, used = [], []
    for override in overrides:
        key = _key_of(override)
        if key not in deprecated:
            rewritten.append(override)
            continue
        new = new_key(deprecated[key])
        if new in keys:
            raise UserError(f"{key}= and {new}= are the same setting; pass {new}= only")
        rewritten.append(_rewritten(override, key, deprecated[key])[0])
        used.append(key)
    return rewritten, used


def _rewritten(override: str, key: str, rename: Rename) -> tuple[str, str, str]:
    """The override under the new key (and value), and the old and the new setting as the warning line
    names them (quiet=true, log_level=warning). An old value without a new spelling is a UserError."""
    marks = override[: len(override) - len(override.lstrip("+~"))]
    rest = override[len(marks) + len(key) :]  # "=value", or "" for a deletion (~key)
    if isinstance(rename, str):
        return marks + rename + rest, key, rename
    value = rest[1:]
    new_value = rename.values.get(value.strip().lower()) if rest.startswith("=") else None
    if new_value is None:
        spelled = ", ".join(f"{key}={old} is {rename.key}={new}" for old, new in rename.values.items())
        raise UserError(f"{override}: {key} was renamed {rename.key}; pass {rename.key}=... ({spelled})")
    return f"{marks}{rename.key}={new_value}", f"{key}={value}", f"{rename.key}={new_value}"


def deprecation_lines(overrides: Sequence[str], deprecated: Mapping[str, Rename]) -> list[str]:
    """One warning line per old key used (for a key with renamed values: per old value used)."""
    lines = []
    for override in overrides:
        key = _key_of(override)
        if key in deprecated:
            _, old, new = _rewritten(override, key, deprecated[key])
            lines.append(deprecation_message(old, new))
    return list(dict.fromkeys(lines))


def accept_deprecated_keys(deprecated: Mapping[str, Rename]) -> Callable[[F], F]:
    """Rewrite sys.argv's overrides of the old keys in `deprecated` (old -> new) to the new keys, with
    one warning line per old key, before Hydra composes the config. The wrapper keeps the mapping as its
    `deprecated_keys`, so a test can check a command accepts what the table says."""

    def decorate(main: F) -> F:
        @functools.wraps(main)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                rewritten, _ = deprecated_key_overrides(sys.argv[1:], deprecated)
            except UserError as error:
                print(f"error: {error}", file=sys.stderr)
                sys.exit(2)
            for line in deprecation_lines(sys.argv[1:], deprecated):
                log.warning(line)
            sys.argv[1:] = rewritten
            return main(*args, **kwargs)

        wrapper.deprecated_keys = dict(deprecated)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate

"""Data settings that were renamed or moved; each old name works for one release, with one warning line.

    data.filter.max_length_ratio             -> data.filter.max_token_ratio     (a ratio of tokens)
    DropLengthRatio(max_ratio=)              -> DropLengthRatio(max_char_ratio=) (a ratio of characters)
    seq2seq.decode.pair_filter.<Transform>   -> seq2seq.inference.pair_filter.<Transform>

A rename never changes what was recorded under the old name: `current_fingerprint_settings` reads a
settings fingerprint (a checkpoint's, a run's) under the new names, so a run is not refused on resume
only because its config spells a setting the old way, and the cleaned-corpus cache key hashes transform
settings under their first names (`first_names`), so a corpus cleaned before a rename is not cleaned again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from seq2seq.errors import UserError, deprecation_message

log = logging.getLogger(__name__)

FILTER_KEYS = {"max_length_ratio": "max_token_ratio"}  # data.filter.<old> -> data.filter.<new>
TRANSFORM_KEYWORDS = {  # a transform's `_target_` -> {old keyword: new keyword}
    "seq2seq.data.transforms.DropLengthRatio": {"max_ratio": "max_char_ratio"},
}
TRANSFORM_TARGETS = {  # moved transform classes: old `_target_` -> new
    "seq2seq.decode.pair_filter.TranslationScoreFilter": (
        "seq2seq.inference.pair_filter.TranslationScoreFilter"
    ),
}


def current_filter(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`data.filter` with old keys under their new names, one warning line per old key used; both names
    of one setting is a UserError (which value was meant?)."""
    current = dict(settings)
    for old, new in FILTER_KEYS.items():
        if old not in current:
            continue
        if new in current:
            raise UserError(f"data.filter.{old} and data.filter.{new} are the same setting; keep {new} only")
        log.warning(deprecation_message(f"data.filter.{old}", f"data.filter.{new}"))
        current[new] = current.pop(old)
    return current


def renamed_keyword(where: str, *, old: str, old_value: Any, new: str, new_value: Any, default: Any) -> Any:
    """The value of a transform's keyword `new` that was called `old`: `old_value` (None: not given) with
    a warning line, else `new_value`; both given is a UserError."""
    if old_value is None:
        return new_value
    if new_value != default:
        raise UserError(f"{where}: {old}= and {new}= are the same setting; pass {new}= only")
    log.warning(deprecation_message(f"{where}({old}=)", f"{where}({new}=)"))
    return old_value


def first_names(target: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A transform's settings with renamed keywords under their first names: what its cache key hashes."""
    back = {new: old for old, new in TRANSFORM_KEYWORDS.get(target, {}).items()}
    return {back.get(key, key): value for key, value in settings.items()}


def current_transform(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A `data.transforms` entry (as recorded) with its current `_target_` and keyword names."""
    target = str(entry.get("_target_", ""))
    target = TRANSFORM_TARGETS.get(target, target)
    renamed = TRANSFORM_KEYWORDS.get(target, {})
    return {renamed.get(key, key): value for key, value in {**entry, "_target_": target}.items()}


def current_fingerprint_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Flattened fingerprint settings ({"data.filter.max_length_ratio": 3.0, "data.transforms": [...]})
    under the current names, so a fingerprint recorded before a rename compares equal to today's."""
    current = {}
    for key, value in settings.items():
        section, _, name = key.rpartition(".")
        if section == "data.filter":
            key = f"{section}.{FILTER_KEYS.get(name, name)}"
        if key == "data.transforms" and isinstance(value, list):
            value = [current_transform(entry) if isinstance(entry, Mapping) else entry for entry in value]
        current[key] = value
    return current

"""SearchOptions: every setting of a search, kept in one object from the config to the search loop.

The `decode` config group holds the same keys. The defaults here are those of `configs/decode/greedy.yaml`
(beam.yaml and sample.yaml are diffs on top of it); tests/cli/test_config_defaults.py keeps them equal.
There, `length_penalty` and `max_len_a` are null: a model may carry its own values for them, tuned on dev
data at the end of training (seq2seq.decode.tuned_decoding), and null is how a config says "not set here".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seq2seq.errors import UserError, renamed_attributes

_TYPES = {"int": int, "float": float, "bool": bool}
# Settings a model may carry tuned values of (seq2seq.decode.tuned_decoding); null in a config = not set.
TUNED_SETTINGS = ("length_penalty", "max_len_a")


@dataclass(frozen=True)
class SearchOptions:
    """How to search. Outputs have at most floor(max_len_a * source length + max_len_b) tokens before eos."""

    beam_size: int = 1
    nbest: int = 1
    length_penalty: float = 1.0  # GNMT alpha: score = log_prob / ((5 + length) / 6) ** alpha
    max_len_a: float = 1.2
    max_len_b: int = 10
    min_len: int = 0
    no_repeat_ngram_size: int = 0
    stop_early: bool = True  # beam: a sentence is done once it has beam_size finished hypotheses
    sampling: bool = False  # sample instead of searching: nbest samples per sentence
    temperature: float = 1.0
    top_k: int = 0  # 0 = no top-k filter
    top_p: float = 1.0  # 1 = no nucleus filter
    seed: int = 0  # with sampling: the same seed and input give the same output

    @classmethod
    def from_config(cls, decode: Mapping[str, Any], base: SearchOptions | None = None) -> SearchOptions:
        """The options of a `decode` config group; a value of the wrong type is a one-line UserError.

        Keys that are not search options are ignored (Hydra's `defaults` list, comments-as-keys); keys
        absent, and TUNED_SETTINGS keys that are null, keep `base`'s values (default: SearchOptions()).
        """
        values = {k: v for k, v in decode.items() if not (k in TUNED_SETTINGS and v is None)}
        return dataclasses.replace(cls() if base is None else base, **_typed_values(values, prefix="decode."))

    def replace(self, **changes: Any) -> SearchOptions:
        """A copy with `changes` applied (None values are ignored), type-checked like a config."""
        values = {name: value for name, value in changes.items() if value is not None}
        unknown = sorted(set(values) - set(self.__dataclass_fields__))
        if unknown:
            raise UserError(f"unknown search option(s) {', '.join(unknown)}; see SearchOptions")
        return dataclasses.replace(self, **_typed_values(values, prefix=""))

    @property
    def searches_beams(self) -> bool:
        """Whether this is a beam search (not greedy search, not sampling)."""
        return not self.sampling and (self.beam_size > 1 or self.nbest > 1)

    def describe(self) -> str:
        """A few words for logs: "beam 5", "greedy search", "sampling (temperature 1.0, top-k 0, ...)"."""
        if self.sampling:
            return f"sampling (temperature {self.temperature}, top-k {self.top_k}, top-p {self.top_p})"
        return f"beam {self.beam_size}" if self.searches_beams else "greedy search"


def given_settings(decode: Mapping[str, Any]) -> frozenset[str]:
    """The TUNED_SETTINGS keys a `decode` mapping sets (not absent, not null): they win over a model's own."""
    return frozenset(key for key in TUNED_SETTINGS if decode.get(key) is not None)


def _typed_values(values: Mapping[str, Any], *, prefix: str) -> dict[str, Any]:
    """The known search options among `values`, ints accepted for floats; a wrong type or a non-finite
    number is a UserError."""
    typed = {}
    for name, field in SearchOptions.__dataclass_fields__.items():
        if name not in values:
            continue
        value, kind = values[name], _TYPES[field.type]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise UserError(
                f"{prefix}{name}={value!r} must be {field.type}; e.g. {prefix}{name}={field.default}"
            )
        if kind is float and not math.isfinite(value):  # Hydra reads inf and nan as numbers
            raise UserError(
                f"{prefix}{name}={value!r} must be a finite number; e.g. {prefix}{name}={field.default}"
            )
        typed[name] = value
    return typed


# The name of the last release, still accepted with a warning until the next one.
__getattr__ = renamed_attributes(__name__, {"MODEL_TUNED": ("TUNED_SETTINGS", TUNED_SETTINGS)})


__all__ = ["TUNED_SETTINGS", "SearchOptions", "given_settings"]


DEFAULT_OPTIONS = SearchOptions(beam_size=5)  # configs/decode/beam.yaml; a test keeps the two equal

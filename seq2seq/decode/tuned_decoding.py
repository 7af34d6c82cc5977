"""A model's own decoding settings: `length_penalty` and `max_len_a` tuned on dev data at the end of
training (seq2seq.train.tune_decoding, `trainer.tune_decoding=true`).

They are the model's tuned decoding, stored with the weights they were tuned for: in the checkpoint under
the key `tuned_decoding`, and in an exported directory's seq2seq.json. A Translator (so seq2seq-translate
and seq2seq-serve too) uses them unless the caller sets the key itself: a key given on the command line or
in a decode config file (the shipped configs leave both null), a `SearchOptions` passed as `options=` (it
is used as it is), or an argument of `translate()` or of a server request. Ensembles use the first
model's. One log line says which values a Translator uses and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seq2seq.decode.options import TUNED_SETTINGS, SearchOptions, given_settings
from seq2seq.errors import UserError, renamed_attributes

# In a checkpoint and in an exported directory's seq2seq.json; `decoding` before (checkpoints: format
# version 2, migrated by seq2seq.checkpoint; exports: read by seq2seq.inference.exported.read_metadata).
PAYLOAD_KEY = "tuned_decoding"


@dataclass(frozen=True)
class TunedDecoding:
    """The stored record (what training measured) and its values, with where they were read from."""

    values: dict[str, float]
    record: dict[str, Any]
    source: str

    @classmethod
    def read(cls, record: Any, source: str) -> TunedDecoding | None:
        """The settings a checkpoint or export stores (None when it stores none); a damaged record is a
        one-line UserError rather than settings silently different from those it claims."""
        if record is None:
            return None
        values = record.get("values") if isinstance(record, dict) else None
        if not isinstance(values, dict) or not set(values) <= set(TUNED_SETTINGS):
            raise UserError(f"{source}: its stored decoding settings are damaged; train or export it again")
        try:
            SearchOptions().replace(**values)  # the same type and range checks as any setting
        except UserError as error:
            raise UserError(f"{source}: stored decoding setting {error}") from None
        return cls({key: float(value) for key, value in values.items()}, dict(record), source)

    def why(self) -> str:
        """How the values were chosen, in a few words from the record."""
        record = self.record
        on = f"{record.get('sentences', '?')} dev sentences with beam {record.get('beam_size', '?')}"
        if record.get("chosen"):
            return (
                f"tuned on {on}: {_bleu(record.get('bleu'))} vs {_bleu(record.get('default_bleu'))} BLEU "
                f"with {_pairs(record.get('defaults', {}))}"
            )
        other = record.get("best_other")
        if not isinstance(other, dict):
            return f"tuning on {on} kept the defaults: no other values scored higher"
        return (
            f"tuning on {on} kept the defaults: the best other values ({_pairs(other.get('values', {}))}) "
            f"scored {_bleu(other.get('bleu'))} vs {_bleu(record.get('default_bleu'))} BLEU, better in "
            f"{other.get('wins', 0):.0%} of bootstrap resamples (needs {record.get('confidence', 0):.0%})"
        )


def requested_options(
    options: SearchOptions | Mapping[str, Any] | None, default: SearchOptions
) -> tuple[SearchOptions, frozenset[str]]:
    """(the options asked for, the TUNED_SETTINGS keys among them that were set explicitly).

    None: `default`, nothing set. A SearchOptions: used as it is, every key set. A mapping like the `decode`
    config: its keys over `default`; the TUNED_SETTINGS keys it leaves out or null are not set.
    """
    if options is None:
        return default, frozenset()
    if isinstance(options, SearchOptions):
        return options, frozenset(TUNED_SETTINGS)
    return SearchOptions.from_config(options, base=default), given_settings(options)


def apply_model_decoding(
    options: SearchOptions, given: frozenset[str], model: TunedDecoding | None, source: str
) -> tuple[SearchOptions, str]:
    """`options` with the model's own values for the TUNED_SETTINGS keys not `given`, and one line for the
    log saying which values are used and why. `source`: the file the model was read from."""
    own = {} if model is None else {k: v for k, v in model.values.items() if k not in given}
    resolved = options.replace(**own)
    parts = []
    if given:
        parts.append(f"{_pairs(_values(resolved, given))} as given")
    if own:
        parts.append(f"{_pairs(own)}, the model's own ({model.why()}; stored in {model.source})")
    rest = [key for key in TUNED_SETTINGS if key not in given and key not in own]
    if rest:
        holds = "holds no tuned values" if model is None else "has no tuned value for them"
        parts.append(f"{_pairs(_values(resolved, rest))}, the built-in defaults ({source} {holds})")
    line = "decoding: " + "; ".join(parts)
    if model is not None and not own:
        unused = f"{_pairs(model.values)}: {model.why()}; stored in {model.source}"
        line += f"; the model's own ({unused}) are not used"
    return resolved, line


def _values(options: SearchOptions, keys: Any) -> dict[str, Any]:
    return {key: getattr(options, key) for key in TUNED_SETTINGS if key in keys}


def _pairs(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in values.items())


def _bleu(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else "?"


# The name of the last release, still accepted with a warning until the next one.
__getattr__ = renamed_attributes(__name__, {"ModelDecoding": ("TunedDecoding", TunedDecoding)})


__all__ = ["PAYLOAD_KEY", "TunedDecoding", "apply_model_decoding", "requested_options"]

"""The checkpoint file (used by training, inference and export): format version, atomic writes, safe loading,
migration and rotation.

A checkpoint is one ``torch.save`` of a dict holding only tensors and plain Python values (dict,
list, tuple, str, bytes, int, float, bool, None, torch dtypes/sizes/devices), plus the key
``format_version``. That restriction lets ``load_checkpoint`` use ``torch.load(weights_only=True)``,
which never runs code from the file; ``save_checkpoint`` enforces it up front so a bad value fails on
the first save, not when resuming days later. Convert configs with ``OmegaConf.to_container`` and
store RNG states via ``seq2seq.train.rng.rng_state`` (numpy arrays become lists).

To change the layout: bump ``FORMAT_VERSION`` and register ``MIGRATIONS[old] = fn`` turning a payload
of version ``old`` into one of version ``old + 1``; ``migrate`` chains them on load.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from seq2seq.errors import UserError
from seq2seq.files import atomic_output

log = logging.getLogger(__name__)

FORMAT_VERSION = 4
VERSION_KEY = "format_version"
# Names the rotation never deletes, whatever pattern it is given.
PROTECTED_NAMES = frozenset({"last.pt", "best.pt"})

Payload = dict[str, Any]


def _model_settings_v2(payload: Payload) -> Payload:
    """Version 1 -> 2: the model settings' new names; the weights are untouched.

    ``attention`` became ``attention_backend``. ``tie_embeddings`` became two switches: it tied the
    decoder input to the output projection, and the encoder input too when the vocabulary sizes were
    equal, so ``share_decoder_output = tie`` and ``share_embeddings = tie and src == tgt size`` rebuild
    exactly the sharing version 1 built. Applied to ``model_config`` and to the saved run config's
    ``model`` section (which has no vocabulary sizes: it follows ``model_config``, or ``tie`` without one).
    """
    model_config = payload.get("model_config")
    joint = None
    if isinstance(model_config, dict):
        joint = model_config.get("src_vocab_size") == model_config.get("tgt_vocab_size")
        payload["model_config"] = _rename_model_settings(model_config, joint)
    config = payload.get("config")
    if isinstance(config, dict) and isinstance(config.get("model"), dict):
        payload["config"] = {**config, "model": _rename_model_settings(config["model"], joint)}
    return payload


def _rename_model_settings(settings: dict[str, Any], joint: bool | None) -> dict[str, Any]:
    """A version-1 model settings dict with the version-2 names (a new dict, same key order)."""
    renamed: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "attention":
            renamed["attention_backend"] = value
        elif key == "tie_embeddings":
            renamed["share_embeddings"] = bool(value) and joint is not False
            renamed["share_decoder_output"] = bool(value)
        else:
            renamed[key] = value
    return renamed


def _tuned_decoding_v3(payload: Payload) -> Payload:
    """Version 2 -> 3: the tuned decoding record (seq2seq.decode.tuned_decoding) is stored under
    ``tuned_decoding``, its one name, instead of ``decoding``; the record itself is unchanged."""
    if "decoding" in payload:
        payload["tuned_decoding"] = payload.pop("decoding")
    return payload


def _lora_v4(payload: Payload) -> Payload:
    """Version 3 -> 4: a checkpoint may hold LoRA adapters beside its weights (``lora``, merged by
    ``model_weights``); an older payload holds none. The version changed so that a release which cannot
    merge adapters refuses such a file instead of loading the weights without them."""
    return payload


# MIGRATIONS[v] upgrades a version-v payload to version v + 1; ``migrate`` chains them on load.
MIGRATIONS: dict[int, Callable[[Payload], Payload]] = {
    1: _model_settings_v2, 2: _tuned_decoding_v3, 3: _lora_v4
}  # fmt: skip

# What torch.load raises on damaged bytes (seen by truncating and flipping bytes of real files).
_DAMAGED_FILE_ERRORS = (
    RuntimeError,
    EOFError,
    OSError,
    ValueError,
    LookupError,
    TypeError,
    AttributeError,
    ArithmeticError,
    MemoryError,
)
# Exact types: subclasses such as numpy.float64 (a float), IntEnum or namedtuple pickle as classes.
_PLAIN_TYPES = (str, bytes, int, float, bool, type(None), torch.dtype, torch.device)
_MAPPING_TYPES = (dict, OrderedDict)
_SEQUENCE_TYPES = (list, tuple, torch.Size)


def _check_storable(value: Any, where: str) -> None:
    """Raise TypeError naming the first value that ``weights_only`` loading would reject."""
    if type(value) in _MAPPING_TYPES:
        for key, item in value.items():
            if type(key) not in (str, int):
                raise TypeError(
                    f"checkpoint key {where}[{key!r}] must be str or int, not {type(key).__name__}"
                )
            _check_storable(item, f"{where}[{key!r}]")
    elif type(value) in _SEQUENCE_TYPES:
        for index, item in enumerate(value):
            _check_storable(item, f"{where}[{index}]")
    elif not (type(value) in _PLAIN_TYPES or isinstance(value, torch.Tensor)):
        raise TypeError(
            f"checkpoint value {where} is a {type(value).__module__}.{type(value).__qualname__}; store only "
            "tensors and plain Python values (OmegaConf.to_container for configs, lists for numpy arrays)"
        )


def save_checkpoint(path: Path, payload: Payload) -> None:
    """Write ``payload`` (plus ``format_version``) to ``path`` so that readers see the old file or the
    complete new one, never a partial write: temp file in the same directory, fsync, ``os.replace``."""
    path = Path(path)
    _check_storable(payload, "payload")
    payload = {**payload, VERSION_KEY: FORMAT_VERSION}
    with atomic_output(path) as handle:  # mode from the umask, like any other file the run writes
        torch.save(payload, handle)
    _fsync_directory(path.parent)
    log.info("saved checkpoint %s", path)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; not every platform can open a directory, which is harmless."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _summary(error: BaseException) -> str:
    """The first sentence of torch's often multi-paragraph load errors, prefixed by the error type."""
    text = str(error)
    marker = "WeightsUnpickler error:"
    if marker in text:
        text = text.split(marker, 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    sentence = lines[0].split(". ", 1)[0].rstrip(".")
    if len(sentence) > 160:
        sentence = sentence[:157] + "..."
    return f"{type(error).__name__}: {sentence}"


def _read(path: Path, map_location: str | torch.device | None, mmap: bool = False) -> Any:
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except PermissionError:
        raise UserError(f"cannot read checkpoint {path} (permission denied); fix its permissions") from None
    except pickle.UnpicklingError as error:
        if "Unsupported global" in str(error):
            raise UserError(
                f"{path} holds Python objects other than tensors and plain values ({_summary(error)}); "
                "it was not written by seq2seq, pass a seq2seq checkpoint"
            ) from None
        raise UserError(
            f"checkpoint {path} is corrupt or truncated ({_summary(error)}); "
            "delete it or resume from another checkpoint"
        ) from None
    except _DAMAGED_FILE_ERRORS as error:
        raise UserError(
            f"checkpoint {path} is corrupt or truncated ({_summary(error)}); "
            "delete it or resume from another checkpoint"
        ) from None


def load_checkpoint(
    path: Path, map_location: str | torch.device | None = "cpu", *, mmap: bool = False
) -> Payload:
    """Read, validate and migrate a checkpoint; every problem with the file is a one-line UserError.

    `mmap=True` maps the file instead of reading it: a tensor's bytes are read when first used, so a
    caller that needs only the model weights never reads the optimizer state (inference does this).
    """
    path = Path(path)
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise UserError(f"checkpoint {path} {what}; pass the path of a .pt checkpoint file")
    payload = _read(path, map_location, mmap)
    if not isinstance(payload, dict) or VERSION_KEY not in payload:
        raise UserError(
            f"{path} is not a seq2seq checkpoint (no {VERSION_KEY}); pass one written by training"
        )
    version = payload[VERSION_KEY]
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise UserError(
            f"checkpoint {path} has an invalid {VERSION_KEY}={version!r}; it is damaged or foreign"
        )
    if version > FORMAT_VERSION:
        raise UserError(
            f"checkpoint {path} has format version {version}, newer than the supported {FORMAT_VERSION}; "
            "upgrade seq2seq to read it"
        )
    try:
        return migrate(payload)
    except UserError as error:
        raise UserError(f"checkpoint {path}: {error}") from None


def migrate(payload: Payload) -> Payload:
    """Upgrade a payload of any older format to ``FORMAT_VERSION``, one registered step at a time."""
    version = payload[VERSION_KEY]
    while version < FORMAT_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise UserError(
                f"format version {version} cannot be migrated by this seq2seq; use an older release"
            )
        payload = step(dict(payload))
        version += 1
        payload[VERSION_KEY] = version
        log.info("migrated checkpoint payload from format version %d to %d", version - 1, version)
    return payload


def remove_stale_temporaries(directory: Path, *, older_than: float) -> list[Path]:
    """Delete the temporary files of checkpoint writes that never finished (a killed process) and are
    older than `older_than` (a time.time() value, e.g. this run's start), so a live writer's file stays."""
    removed = []
    if not Path(directory).is_dir():
        return removed
    for candidate in Path(directory).glob(".*.pt.*.tmp"):
        if candidate.is_file() and candidate.stat().st_mtime < older_than:
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    if removed:
        log.info(
            "removed %d unfinished checkpoint file(s) left by an interrupted run in %s",
            len(removed),
            directory,
        )
    return removed


def _step_regex(pattern: str) -> re.Pattern[str]:
    if pattern.count("{step}") != 1 or "/" in pattern or os.sep in pattern:
        raise UserError(
            f"checkpoint pattern {pattern!r} must be a file name containing '{{step}}' exactly once, "
            "e.g. 'checkpoint_{step}.pt'"
        )
    before, after = pattern.split("{step}")
    return re.compile(re.escape(before) + r"(\d+)" + re.escape(after))


def rotate_checkpoints(
    directory: Path, pattern: str = "checkpoint_{step}.pt", *, keep: int, newest_step: int | None = None
) -> list[Path]:
    """Delete all but the ``keep`` highest-step files named like ``pattern``; return what was removed.

    Steps compare as numbers (``checkpoint_1000.pt`` is newer than ``checkpoint_999.pt``).
    ``last.pt`` and ``best.pt`` are never touched, nor is anything that does not match ``pattern``.
    With ``newest_step`` (the step a run just saved), files numbered above it are another run's: they
    are neither counted nor deleted, so they can never push out the checkpoints the run is writing.
    """
    if keep < 0:
        raise UserError(f"keep={keep} must be non-negative; use 0 to keep only last.pt and best.pt")
    regex = _step_regex(pattern)
    numbered, foreign = [], []
    for candidate in Path(directory).iterdir():
        match = regex.fullmatch(candidate.name)
        if match and candidate.is_file() and candidate.name not in PROTECTED_NAMES:
            step = int(match.group(1))
            (foreign if newest_step is not None and step > newest_step else numbered).append(
                (step, candidate)
            )
    if foreign:
        log.warning(
            "rotation leaves %s alone: numbered after update %d, the newest of this run",
            ", ".join(path.name for _, path in sorted(foreign)),
            newest_step,
        )
    numbered.sort()
    doomed = [path for _, path in numbered[: max(0, len(numbered) - keep)]]
    for path in doomed:
        path.unlink(missing_ok=True)
        log.info("removed old checkpoint %s", path)
    return doomed


LORA_KEY = "lora"  # a LoRA run's adapters and their settings, beside "model" (seq2seq.train.lora)


def model_weights(payload: Payload) -> dict[str, torch.Tensor]:
    """The checkpoint's model as an ordinary model's state dict: ``payload["model"]``, with a LoRA run's
    adapters (``payload["lora"]``: rank, alpha and ``<layer>.lora_a`` A (r, in), ``<layer>.lora_b``
    B (out, r)) merged into the weights they adapt, W + (alpha / r) · B A, computed in float32.

    The one place adapters are merged: inference, averaging, export and init_from read a checkpoint's
    model here, so a LoRA checkpoint is an ordinary model to each of them.
    """
    weights = payload["model"]
    lora = payload.get(LORA_KEY)
    if lora is None:
        return weights
    scaling = float(lora["alpha"]) / int(lora["rank"])
    merged = dict(weights)
    adapters = lora["adapters"]
    for layer in (key.removesuffix(".lora_a") for key in adapters if key.endswith(".lora_a")):
        weight = weights.get(f"{layer}.weight")
        if weight is None or f"{layer}.lora_b" not in adapters:
            raise UserError(f"the checkpoint's LoRA adapter {layer} has no weight to merge into (or no "
                            "lora_b); the checkpoint is damaged: use another one")  # fmt: skip
        a, b = adapters[f"{layer}.lora_a"].float(), adapters[f"{layer}.lora_b"].float()
        merged[f"{layer}.weight"] = torch.addmm(weight.float(), b, a, alpha=scaling).to(weight.dtype)
    return merged

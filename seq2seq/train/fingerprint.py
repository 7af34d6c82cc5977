"""The settings fingerprint of a training run: what defines its model and data, stored in every checkpoint.

Resuming with other defining settings would silently continue a different experiment (and its summary
would pair the new command with the old scores), so a resume compares the checkpoint's fingerprint
with the run's and stops naming the keys that differ.

Defining (must match on resume): the model section (except `attention_backend` and
`checkpoint_activations`, which compute the same numbers another way); the corpus by content (sha256 of
the training and dev files, so a moved `data.dir` still resumes), its languages, encoding, filters and
tokenizer, cleaning transforms, and each training corpus's weight, tag and noise; loss, optim, schedule,
seed; and the trainer's batch recipe (max_tokens, update_freq, clip_norm). Everything else may change on
resume: budgets (max_updates, max_epochs, max_minutes), validation and decoding for it, checkpointing and
the end of the run (save_every, keep_last, average_last, average_fraction, snapshot_every, max_snapshots,
tune_decoding), logging, device, threads, precision, data.workers / cache_dir, run_name.

A fine-tuning run also hashes its init_from checkpoint by content (`init_from.sha256`) and its
trainer.freeze patterns: a run directory started from one checkpoint is never taken over by a run from
another, nor by one that freezes other parameters. Both are in a fingerprint only when used, as are
trainer.lora's settings (seq2seq.train.lora): a LoRA run is resumed with its own adapters only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seq2seq.data.binarize import file_digest
from seq2seq.data.renamed_settings import current_fingerprint_settings
from seq2seq.errors import UserError
from seq2seq.train.lora import FINGERPRINT_KEYS as LORA_KEYS
from seq2seq.train.lora import lora_settings

log = logging.getLogger(__name__)

SECTIONS = ("model", "loss", "optim", "schedule", "seed")
DATA_KEYS = ("src_lang", "tgt_lang", "encoding_errors", "filter", "tokenizer")
TRAINER_KEYS = ("max_tokens", "update_freq", "clip_norm")
SAME_NUMBERS_MODEL_KEYS = ("attention_backend", "checkpoint_activations")
CORPUS_FILES = ("train.src", "train.tgt", "dev.src", "dev.tgt")  # data.<split>.<side>, hashed
# a training corpus's settings besides its files (a multilingual run's languages among them)
MIXING_KEYS = ("weight", "tag", "noise", "src_lang", "tgt_lang")
# In a fingerprint only when used, so that a run without them keeps its older fingerprint: absent is "none"
SET_WHEN_USED = ("data.train_mixing", "data.transforms", "trainer.freeze", "init_from.sha256", *LORA_KEYS)
UNSET = object()
SHOWN_DIFFERENCES = 6
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def _flatten(node: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = list(node) if isinstance(node, tuple) else node
    return out


def run_fingerprint(
    config: Mapping[str, Any], corpus_files: Mapping[str, Path], init_from: Path | None = None
) -> dict[str, Any]:
    """{"sha256": ..., "settings": {dotted key: value}} of a resolved run config and its corpus files.

    `corpus_files` maps the names in CORPUS_FILES (with several training corpora: train[0].src, ...; with
    several dev sets: dev[0].src, ...) to the files' absolute paths; `init_from`: the checkpoint a
    fine-tuning run starts from (hashed too).
    """
    model = {k: v for k, v in config["model"].items() if k not in SAME_NUMBERS_MODEL_KEYS}
    data = {key: config["data"].get(key) for key in DATA_KEYS}
    for key in ("transforms", "transform_splits"):  # set only when used: older runs' keys stay the same
        if config["data"].get(key):
            data[key] = config["data"][key]
    train = config["data"].get("train")
    extra = config["data"].get("extra_train") or []
    corpora = [*(train if isinstance(train, list) else [train or {}]), *extra]
    mixing = [{k: v for k, v in corpus.items() if k in MIXING_KEYS and v is not None} for corpus in corpora]
    if any(mixing) or len(corpora) > 1:
        data["train_mixing"] = mixing
    chosen = {
        **{section: config[section] for section in SECTIONS if section != "model"},
        "model": model,
        "data": data,
        "trainer": {key: config["trainer"][key] for key in TRAINER_KEYS},
    }
    if config["trainer"].get("freeze"):
        chosen["trainer"]["freeze"] = list(config["trainer"]["freeze"])
    if config["trainer"].get("lora") is not None:  # its settings completed: {} and the defaults are one run
        chosen["trainer"]["lora"] = lora_settings(config["trainer"]["lora"]).record()
    files = {f"data.{name}": path for name, path in corpus_files.items()}
    return settings_fingerprint(chosen, {**files, **({} if init_from is None else {"init_from": init_from})})


def settings_fingerprint(chosen: Mapping[str, Any], files: Mapping[str, Path]) -> dict[str, Any]:
    """{"sha256": ..., "settings": {dotted key: value}} of nested `chosen` settings plus the sha256 of each
    of `files` (as "<name>.sha256"); what run_fingerprint builds, for any run's own choice of settings."""
    settings = current_fingerprint_settings(_flatten(chosen, "", {}))
    for name, path in files.items():
        settings[f"{name}.sha256"] = file_digest(path)
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()
    return {"sha256": digest, "settings": settings}


def _show(value: Any) -> str:
    if value is UNSET:
        return "unset"
    if isinstance(value, str):
        return f"{value[:12]}…" if _HEX_DIGEST.fullmatch(value) else value
    return json.dumps(value, default=str)


def differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """'key: old → new' for every key both fingerprints hold with different values (keys added to the
    config after a checkpoint was written are not differences), and for a SET_WHEN_USED key that one of
    them holds: "unset" on the other side (a corpus weight, tag or noise, or transforms, added or removed)."""
    old = current_fingerprint_settings(saved.get("settings", {}))
    new = current_fingerprint_settings(current["settings"])
    keys = old.keys() & new.keys() | {key for key in old.keys() ^ new.keys() if key in SET_WHEN_USED}
    changed = sorted(key for key in keys if old.get(key, UNSET) != new.get(key, UNSET))
    return [f"{key}: {_show(old.get(key, UNSET))} → {_show(new.get(key, UNSET))}" for key in changed]


def check_same_run(checkpoint: Path, saved: Mapping[str, Any] | None, current: Mapping[str, Any]) -> None:
    """Raise a one-line UserError when `checkpoint` was trained with other defining settings."""
    if saved is None:
        log.warning(
            "%s has no settings fingerprint (written before they were recorded); resuming it without "
            "comparing its model and data settings with this run's",
            checkpoint,
        )
        return
    changed = differences(saved, current)
    if not changed:
        return
    shown = ", ".join(changed[:SHOWN_DIFFERENCES])
    more = f" and {len(changed) - SHOWN_DIFFERENCES} more" if len(changed) > SHOWN_DIFFERENCES else ""
    raise UserError(
        f"{checkpoint} was trained with other model/data settings ({shown}{more}); resume it with its "
        "own settings, or start this run under a new run_name (or hydra.run.dir)"
    )

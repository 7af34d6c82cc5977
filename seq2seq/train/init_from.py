"""init_from: the checkpoint a fine-tuning run starts from (ours, or one seq2seq-import wrote from a
Hugging Face model): its architecture, its tokenizer(s) and its weights. Its optimizer, schedule and
step are not taken: a fine-tuning run starts them fresh, at update 0.

The `model` settings split in two. TRAINING_ONLY_KEYS change how the model trains, not what its weights
compute in eval mode (dropout, recomputing activations, the attention kernel): a run may set them, and
takes the checkpoint's otherwise. ALIGNMENT_KEYS name the cross-attention head guided alignment trains
and alignment output reads: no weight depends on them either, so a run may name another head (a model
without one may start guided alignment from init_from), and a null keeps the checkpoint's. Every other
key is the architecture, which is the checkpoint's: a run that sets one to another value is refused with
the key named (`model_settings`).
"""

from __future__ import annotations

import inspect
import logging
import zipfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.checkpoint import load_checkpoint, model_weights
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes
from seq2seq.data.vocabulary import GivenTokenizers
from seq2seq.errors import UserError
from seq2seq.model import FAMILY_BUILDERS, build_from_config, family_of
from seq2seq.model.builders import RUN_TIME_ARGUMENTS
from seq2seq.model.families import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY

log = logging.getLogger(__name__)

TRAINING_ONLY_KEYS = ("dropout", "attention_dropout", "activation_dropout", "checkpoint_activations",
                      "attention_backend")  # fmt: skip
ALIGNMENT_KEYS = ("alignment_layer", "alignment_head")  # null: unset (guided alignment picks a head)
# The `model._target_` of each family a run may fine-tune (configs/model/*.yaml spell them so).
FAMILY_TARGETS = {
    ENCODER_DECODER: "seq2seq.model.build_model",
    DECODER_ONLY: "seq2seq.model.build_decoder_only",
}
SHOWN_KEYS = 4


@dataclass(frozen=True)
class StartingPoint:
    """A checked init_from checkpoint: what a run takes from it."""

    path: Path
    model_config: dict[str, Any]  # the checkpoint's, "family" included
    weights: Mapping[str, torch.Tensor]  # mapped from the file, read as they are copied
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer  # the same object as src_tokenizer when the checkpoint's is joint

    @property
    def family(self) -> str:
        return family_of(self.model_config)

    @property
    def joint(self) -> bool:
        return self.src_tokenizer is self.tgt_tokenizer

    @property
    def tokenizers(self) -> GivenTokenizers:
        """What the data pipeline takes instead of training tokenizers."""
        return GivenTokenizers(src=self.src_tokenizer, tgt=self.tgt_tokenizer, origin=str(self.path))


def read_starting_point(path: Path) -> StartingPoint:
    """The checkpoint at `path`, checked to hold a translation model, its settings and its tokenizer(s);
    every problem is a one-line UserError naming init_from."""
    if not path.is_file():
        raise UserError(f"init_from={path}: no such checkpoint file; pass a .pt file written by "
                        "seq2seq-train or seq2seq-import")  # fmt: skip
    if not zipfile.is_zipfile(path):  # what torch.save writes; mapped below, so a large model is not copied
        raise UserError(f"init_from={path} is not a checkpoint (not a file torch.save wrote); pass a .pt "
                        "file written by seq2seq-train or seq2seq-import")  # fmt: skip
    try:
        payload = load_checkpoint(path, mmap=True)
    except UserError as error:
        raise UserError(f"init_from: {error}") from None
    config, weights, tokenizers = (payload.get(key) for key in ("model_config", "model", "tokenizer"))
    if not isinstance(config, dict) or not isinstance(weights, dict):
        raise UserError(f"init_from={path} holds no model (model and model_config); pass a checkpoint "
                        "written by seq2seq-train or seq2seq-import")  # fmt: skip
    family = _translating_family(path, config)
    if not isinstance(tokenizers, dict) or not isinstance(tokenizers.get("src"), bytes):
        raise UserError(f"init_from={path} holds no tokenizer; pass a checkpoint written by seq2seq-train "
                        "or seq2seq-import")  # fmt: skip
    src = _tokenizer(tokenizers["src"], path)
    tgt = src if tokenizers.get("tgt") in (None, tokenizers["src"]) else _tokenizer(tokenizers["tgt"], path)
    _check_vocabulary(path, config, src, tgt)
    log.info("init_from: %s, a model of the %s family (update %s of its run)", path, family,
             payload.get("step", "?"))  # fmt: skip
    weights = model_weights(payload)  # a LoRA run's adapters merged: the model it translates with
    return StartingPoint(path=path, model_config=dict(config), weights=weights, src_tokenizer=src,
                         tgt_tokenizer=tgt)  # fmt: skip


def _translating_family(path: Path, config: dict[str, Any]) -> str:
    try:
        family = family_of(config)
    except UserError as error:
        raise UserError(f"init_from={path}: {error}") from None
    if family == ENCODER_ONLY:
        raise UserError(f"init_from={path} holds a quality-estimation model (encoder_only), which does "
                        "not translate; pass a translation checkpoint (QE models train with "
                        "seq2seq-qe-train)")  # fmt: skip
    return family


def _tokenizer(data: bytes, path: Path) -> TextTokenizer:
    try:
        return tokenizer_from_bytes(data)
    except UserError as error:
        raise UserError(f"init_from={path}: its tokenizer cannot be read ({error})") from None


def _check_vocabulary(path: Path, config: dict[str, Any], src: TextTokenizer, tgt: TextTokenizer) -> None:
    """The tokenizers' ids must fit the model's embeddings, with the model's padding id."""
    for side, tokenizer in (("src", src), ("tgt", tgt)):
        rows = config.get(f"{side}_vocab_size")
        if rows is not None and tokenizer.vocab_size > int(rows):
            raise UserError(f"init_from={path}: its {side} tokenizer has {tokenizer.vocab_size} ids but the "
                            f"model only {rows} embeddings; the checkpoint is inconsistent")  # fmt: skip
    if "pad_id" in config and int(config["pad_id"]) != src.pad_id:
        raise UserError(f"init_from={path}: the model pads with id {config['pad_id']}, its tokenizer with "
                        f"{src.pad_id}; the checkpoint is inconsistent")  # fmt: skip


def _arguments(family: str) -> dict[str, inspect.Parameter]:
    """The `model` settings of `family`: its builder's keyword arguments but the run-time ones."""
    parameters = inspect.signature(FAMILY_BUILDERS[family]).parameters
    return {name: p for name, p in parameters.items() if name not in RUN_TIME_ARGUMENTS}


def model_settings(
    start: StartingPoint, composed: Mapping[str, Any], *, explicit: Collection[str]
) -> dict[str, Any]:
    """The run's `model` section: the checkpoint's architecture, plus the training-only keys and the
    non-null alignment head keys the run set (`explicit` names the keys of `composed`, the run's composed
    `model`, that the run chose rather than took from the defaults). An explicit architecture key that
    differs from the checkpoint's, or that its family does not have, is a one-line UserError."""
    family, arguments = start.family, _arguments(start.family)
    target = composed.get("_target_")
    if "_target_" in explicit and str(target).rsplit(".", 1)[-1] != FAMILY_BUILDERS[family].__name__:
        raise UserError(f"model._target_={target} (a model choice) builds another family than init_from="
                        f"{start.path}, a model of the {family} family; drop the model choice: the "
                        "architecture comes from init_from")  # fmt: skip
    unknown = sorted(set(start.model_config) - set(arguments) - set(RUN_TIME_ARGUMENTS) - {"family"})
    if unknown:
        raise UserError(f"init_from={start.path} has model settings this version does not know ({unknown}); "
                        "upgrade seq2seq")  # fmt: skip
    saved = {name: start.model_config.get(name, p.default) for name, p in arguments.items()}
    clashes = [
        f"model.{key}={composed[key]} (the checkpoint's: {saved[key] if key in saved else 'no such setting'})"
        for key in sorted(explicit)
        if key in composed and key != "_target_" and key not in TRAINING_ONLY_KEYS
        and not (key in ALIGNMENT_KEYS and key in saved) and (key not in saved or composed[key] != saved[key])
    ]  # fmt: skip
    if clashes:
        more = f" and {len(clashes) - SHOWN_KEYS} more" if len(clashes) > SHOWN_KEYS else ""
        raise UserError(f"{', '.join(clashes[:SHOWN_KEYS])}{more}: the architecture comes from init_from="
                        f"{start.path} as it is; drop these model settings (only "
                        f"{', '.join(TRAINING_ONLY_KEYS + ALIGNMENT_KEYS)} may be set)")  # fmt: skip
    chosen = {key: composed[key] for key in TRAINING_ONLY_KEYS if key in explicit and key in composed}
    chosen |= {key: composed[key] for key in ALIGNMENT_KEYS
               if key in explicit and key in saved and composed.get(key) is not None}  # fmt: skip
    return {"_target_": FAMILY_TARGETS[family], **saved, **chosen}


def build_starting_model(start: StartingPoint, settings: Mapping[str, Any]) -> nn.Module:
    """The checkpoint's model with its weights (loaded strictly) and the training-only and alignment
    head keys of `settings` (model_settings' result, with the head guided alignment may have chosen)."""
    keys = [key for key in (*TRAINING_ONLY_KEYS, *ALIGNMENT_KEYS) if key in settings]
    config = {**start.model_config, **{key: settings[key] for key in keys}}
    model = build_from_config(config)
    try:
        result = model.load_state_dict(start.weights, strict=False)
    except RuntimeError as error:
        lines = str(error).strip().splitlines()  # "Error(s) in loading state_dict ...", then the details
        first = " ".join(lines[min(1, len(lines) - 1)].split())[:300]
        raise UserError(f"init_from={start.path}: its weights do not fit its model_config ({first}); "
                        "the checkpoint is damaged or inconsistent") from None  # fmt: skip
    if result.missing_keys or result.unexpected_keys:
        shown = [f"missing {key}" for key in result.missing_keys[:SHOWN_KEYS]]
        shown += [f"unexpected {key}" for key in result.unexpected_keys[:SHOWN_KEYS]]
        raise UserError(f"init_from={start.path}: its weights do not fit its model_config "
                        f"({', '.join(shown)}); the checkpoint is damaged or inconsistent")  # fmt: skip
    return model

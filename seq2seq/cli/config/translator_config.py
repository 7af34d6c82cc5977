"""A command's config -> a Translator, one way for every command that translates (seq2seq-translate,
seq2seq-serve, seq2seq-backtranslate, seq2seq-qe-data): the same key means the same thing in each.

A key that a command's config does not have (seq2seq-backtranslate has no glossary, seq2seq-qe-data no
engine) takes the Translator's own default, so that a key added to one command needs no change here.
The language codes of a multilingual model are the exception: seq2seq-backtranslate's src_lang and
tgt_lang name its corpus files, so a command passes the codes itself (`src_lang=`, `tgt_lang=`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.config.setting_checks import pick_device
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.rerank import rerank_setting
from seq2seq.inference.translator import Translator
from seq2seq.qe.scorer import QualityEstimator


def translator_from_config(
    cfg: DictConfig,
    *,
    checkpoint: str | Path | None = None,
    device: torch.device | None = None,
    options: SearchOptions | Mapping[str, Any] | None = None,
    max_input_tokens: int | None = None,
    glossary: Glossary | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> Translator:
    """The Translator of `cfg`'s keys (checkpoint, engine, device, precision, quantization, compile,
    shortlist, decode, max_input_tokens, long_lines, glossary, qe_checkpoint, rerank, rerank_weight,
    markup, placeholders).
    The keyword arguments stand in for keys a caller has already read or checked: `checkpoint` (a
    pass's own), `device`, `options` (else the `decode` group), `max_input_tokens`, a loaded `glossary`;
    `src_lang` / `tgt_lang`: the language codes of a multilingual model (None: those it recorded)."""
    device = device if device is not None else pick_device(str(cfg.get("device", "auto")))
    if options is None and cfg.get("decode") is not None:
        options = OmegaConf.to_container(cfg.decode)  # keys left null: the model's own tuned values
    weight = rerank_weight(cfg)  # checked before any model loads
    return Translator.from_checkpoint(
        checkpoint if checkpoint is not None else checkpoint_paths(cfg.checkpoint),
        device=device,
        engine=str(cfg.get("engine", "auto")),
        precision=str(cfg.get("precision", "fp32")),
        quantization=str(cfg.get("quantization", "none")),
        compile=cfg.get("compile", "auto"),
        shortlist=_path_or_none(cfg.get("shortlist")),
        options=options,
        max_input_tokens=max_input_tokens if max_input_tokens is not None else cfg.get("max_input_tokens"),
        long_lines=str(cfg.get("long_lines", "truncate")),
        glossary=glossary if glossary is not None else _path_or_none(cfg.get("glossary")),
        qe_checkpoint=quality_model(cfg, device),
        rerank=cfg.get("rerank"),
        rerank_weight=weight,
        src_lang=_code_or_none(src_lang),
        tgt_lang=_code_or_none(tgt_lang),
        markup=cfg.get("markup", "auto"),
        placeholders=placeholder_patterns(cfg.get("placeholders")),
    )


def placeholder_patterns(setting: Any) -> list[str] | None:
    """placeholders=[...]: regular expressions (null: the defaults; []: none)."""
    if setting is None:
        return None
    if not OmegaConf.is_list(setting):
        raise UserError(f"placeholders={setting!r} must be a list of regular expressions, e.g. "
                        "'placeholders=[\\{\\w+\\}]', [] for none or null for the defaults")  # fmt: skip
    return [str(pattern) for pattern in setting]


def checkpoint_paths(setting: Any) -> list[str]:
    """checkpoint=PATH, or checkpoint=[a.pt,b.pt] for an ensemble, as absolute paths."""
    values = list(setting) if OmegaConf.is_list(setting) else [setting]
    return [hydra.utils.to_absolute_path(str(value)) for value in values]


def quality_model(cfg: DictConfig, device: torch.device) -> QualityEstimator | None:
    """The QE model of qe_checkpoint= (None when not set): it scores every translation."""
    if not cfg.get("qe_checkpoint"):
        return None
    path = hydra.utils.to_absolute_path(str(cfg.qe_checkpoint))
    return QualityEstimator.from_checkpoint(path, device=device, precision=str(cfg.get("precision", "fp32")))


def rerank_weight(cfg: DictConfig) -> float | None:
    """rerank=qe's weight (None without re-ranking); rerank=qe needs qe_checkpoint= (checked before any
    model loads: seq2seq-serve calls this before its worker thread loads the model)."""
    return rerank_setting(cfg.get("rerank"), cfg.get("rerank_weight"), has_qe=bool(cfg.get("qe_checkpoint")))


def _code_or_none(setting: Any) -> str | None:
    """A language code as a string (a number on the command line reads as one: tgt_lang=1 -> "1")."""
    return None if setting is None else str(setting)


def _path_or_none(setting: Any) -> str | None:
    return None if setting is None else hydra.utils.to_absolute_path(str(setting))

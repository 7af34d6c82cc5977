"""A command's config -> a Translator, one way for every command that translates (seq2seq-translate,
seq2seq-serve, seq2seq-backtranslate, seq2seq-qe-data): the same key means the same thing in each.

A key that a command's config does not have (seq2seq-backtranslate has no glossary, seq2seq-qe-data no
engine), or leaves null, takes Translator.from_checkpoint's default: the one home of every default (the
YAML files repeat them, and tests/cli/test_command_settings.py checks that they agree).
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

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.rerank import rerank_setting
from seq2seq.inference.translator import Translator

# The keys passed on as they are, and the paths made absolute first (Translator.from_checkpoint's keywords).
SCALAR_KEYS = ("engine", "device", "precision", "quantization", "compile", "max_input_tokens", "long_lines",
               "rerank", "markup")  # fmt: skip
PATH_KEYS = ("shortlist", "glossary", "qe_checkpoint")


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
    given: dict[str, Any] = {key: cfg[key] for key in SCALAR_KEYS if cfg.get(key) is not None}
    given.update({key: _path_or_none(cfg.get(key)) for key in PATH_KEYS if cfg.get(key) is not None})
    if device is not None:
        given["device"] = device
    if options is None and cfg.get("decode") is not None:
        options = OmegaConf.to_container(cfg.decode)  # keys left null: the model's own tuned values
    if max_input_tokens is not None:
        given["max_input_tokens"] = max_input_tokens
    if glossary is not None:
        given["glossary"] = glossary
    if cfg.get("placeholders") is not None:
        given["placeholders"] = placeholder_patterns(cfg.placeholders)
    given["rerank_weight"] = rerank_weight(cfg)  # None without rerank=qe; checked before any model loads
    return Translator.from_checkpoint(
        checkpoint if checkpoint is not None else checkpoint_paths(cfg.checkpoint), options=options,
        src_lang=_code_or_none(src_lang), tgt_lang=_code_or_none(tgt_lang), **given,
    )  # fmt: skip


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


def rerank_weight(cfg: DictConfig) -> float | None:
    """rerank=qe's weight (None without re-ranking); rerank=qe needs qe_checkpoint= (checked before any
    model loads: seq2seq-serve calls this before its worker thread loads the model)."""
    return rerank_setting(cfg.get("rerank"), cfg.get("rerank_weight"), has_qe=bool(cfg.get("qe_checkpoint")))


def _code_or_none(setting: Any) -> str | None:
    """A language code as a string (a number on the command line reads as one: tgt_lang=1 -> "1")."""
    return None if setting is None else str(setting)


def _path_or_none(setting: Any) -> str | None:
    return None if setting is None else hydra.utils.to_absolute_path(str(setting))

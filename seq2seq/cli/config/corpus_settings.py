"""seq2seq-backtranslate's and seq2seq-distill's config -> their typed settings
(seq2seq.corpus_translation.settings): paths made absolute, numbers and the progress bar read as the
command line gives them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.config.paths import absolute
from seq2seq.cli.config.setting_checks import number_setting, progress_bar_setting
from seq2seq.corpus_translation.settings import CorpusSettings

S = TypeVar("S", bound=CorpusSettings)


def corpus_settings(cfg: DictConfig, kind: type[S], **extra: Any) -> S:
    """`kind` (BacktranslateSettings, DistillSettings) of the config's keys, paths made absolute
    (relative ones are relative to where the command was started); `extra`: the command's own keys."""
    listed = OmegaConf.is_list(cfg.checkpoint)
    paths = tuple(Path(absolute(path)) for path in (cfg.checkpoint if listed else [cfg.checkpoint]))
    checkpoint = paths if listed else paths[0]
    return kind(
        checkpoint=checkpoint, input=Path(absolute(cfg.input)), output_dir=Path(absolute(cfg.output_dir)),
        src_lang=_code(cfg.src_lang), tgt_lang=_code(cfg.tgt_lang),
        chunk_lines=number_setting(cfg.chunk_lines, setting="chunk_lines", minimum=1),
        max_tokens=number_setting(cfg.max_tokens, setting="max_tokens", minimum=1),
        encoding_errors=str(cfg.encoding_errors), force=cfg.force,
        progress_bar=progress_bar_setting(cfg.progress_bar),
        precision=str(cfg.precision), quantization=str(cfg.quantization), **extra,
    )  # fmt: skip


def _code(setting: Any) -> str | None:
    """A language code as a string (a number on the command line reads as one: tgt_lang=1 -> "1")."""
    return None if setting is None else str(setting)


__all__ = ["corpus_settings"]

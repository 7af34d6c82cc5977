"""seq2seq-distill: the training sources and a teacher in, the teacher's translations out, as the corpus a
smaller student learns from (sequence-level knowledge distillation, Kim and Rush 2016).

seq2seq-distill checkpoint=runs/teacher/averaged.pt input=data/bible_en_es/train.en output_dir=distilled
seq2seq-distill checkpoint=[runs/a/averaged.pt,runs/b/averaged.pt] input=train.en output_dir=distilled
seq2seq-distill checkpoint=... input=train.en output_dir=distilled filter.drop_fraction=0.05

Reads the config, builds the typed settings and the teacher's Translator, and calls
seq2seq.corpus_translation.distill, the Python API (docs/distillation.md).
"""

from __future__ import annotations

import logging
import math
import sys
from typing import Any

from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.config.corpus_settings import corpus_settings
from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.cli.config.setting_checks import log_level_setting, number_setting
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.corpus_translation import DistillSettings, ScoreFilter, check_input
from seq2seq.corpus_translation import distill as distill_corpus
from seq2seq.corpus_translation.score_filter import MOST_DROPPED
from seq2seq.errors import UserError


def read_filter(setting: Any) -> ScoreFilter:
    """`filter` of the config ({drop_fraction, min_score}), checked."""
    known = {"drop_fraction", "min_score"}
    unknown = sorted(set(setting or {}) - known)
    if unknown:
        raise UserError(f"filter has unknown keys {unknown}; it takes {sorted(known)}")
    fraction = number_setting((setting or {}).get("drop_fraction", 0.0), setting="filter.drop_fraction",
                              kind=float, minimum=0.0, maximum=MOST_DROPPED)  # fmt: skip
    threshold = (setting or {}).get("min_score")
    if threshold is not None:
        threshold = number_setting(threshold, setting="filter.min_score", kind=float, minimum=-math.inf,
                                   maximum=0.0)  # fmt: skip
    return ScoreFilter(drop_fraction=fraction, min_score=threshold)


@exit_on_user_error
def distill(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=log_level_setting(cfg.log_level),
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    rule = read_filter(OmegaConf.to_container(cfg.filter) if cfg.get("filter") is not None else None)
    settings = corpus_settings(cfg, DistillSettings, filter=rule)
    checked = check_input(settings)  # the whole input read before a model loads or a file is written
    paths = settings.checkpoints
    teacher = translator_from_config(cfg, checkpoint=paths[0] if len(paths) == 1 else list(paths))
    return distill_corpus(teacher, settings, checked=checked)


main = command_main(distill, command="seq2seq-distill", config_name="distill")


if __name__ == "__main__":
    main()


__all__ = ["distill", "read_filter"]

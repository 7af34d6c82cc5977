"""seq2seq-qe-data: a QE corpus from a parallel corpus and translation checkpoints.

seq2seq-qe-data output_dir=runs/qe_data \
    train_passes='[{checkpoint: runs/quickstart/checkpoint_300.pt, decode: greedy}, ...]' \
    dev_passes='[{checkpoint: runs/quickstart/best.pt, decode: beam}]'

Reads the config, builds the typed settings and a Translator per pass checkpoint, and calls
seq2seq.qe.generate.make_qe_data, the Python API (docs/quality-estimation.md).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.cli.config.paths import absolute
from seq2seq.cli.config.setting_checks import number_setting, progress_bar_setting
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.devices import pick_device
from seq2seq.errors import UserError
from seq2seq.inference.translator import Translator
from seq2seq.qe.generate import SPLITS, Pass, QeDataSettings
from seq2seq.qe.generate import make_qe_data as make_qe_corpus


def passes_of(cfg: DictConfig, split: str) -> list[Pass]:
    """`<split>_passes` of the config: a list of {checkpoint: PATH, decode: greedy|beam|sample}."""
    passes = []
    for index, entry in enumerate(cfg.get(f"{split}_passes") or []):
        if not isinstance(entry, DictConfig) or "checkpoint" not in entry:
            raise UserError(f"{split}_passes[{index}] must be {{checkpoint: PATH, decode: "
                            "greedy|beam|sample}")  # fmt: skip
        checkpoint = Path(absolute(entry.checkpoint))
        passes.append(Pass(split, index, checkpoint, str(entry.get("decode", "greedy"))))
    return passes


def qe_data_settings(cfg: DictConfig) -> QeDataSettings:
    """The typed settings of the config, paths made absolute."""
    limit = cfg.max_train_sentences
    return QeDataSettings(
        output_dir=Path(absolute(cfg.output_dir)),
        **{f"{split}_{side}": Path(absolute(cfg[f"{split}_{side}"])) for split in SPLITS
           for side in ("source", "reference")},
        train_passes=tuple(passes_of(cfg, "train")), dev_passes=tuple(passes_of(cfg, "dev")),
        max_train_sentences=None if limit is None else number_setting(limit, setting="max_train_sentences",
                                                                      minimum=1),
        metric=str(cfg.metric), seed=int(cfg.seed), precision=str(cfg.precision),
        max_tokens=number_setting(cfg.max_tokens, setting="max_tokens", minimum=1),
        progress_bar=progress_bar_setting(cfg.progress_bar),
    )  # fmt: skip


@exit_on_user_error
def make_qe_data(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                        datefmt="%H:%M:%S")  # fmt: skip
    settings = qe_data_settings(cfg)
    device = pick_device(str(cfg.device))

    def load(checkpoint: Path) -> Translator:
        return translator_from_config(cfg, checkpoint=checkpoint, device=device)

    return make_qe_corpus(settings, load)


main = command_main(make_qe_data, command="seq2seq-qe-data", config_name="qe_data")


if __name__ == "__main__":
    main()


__all__ = ["make_qe_data", "passes_of"]

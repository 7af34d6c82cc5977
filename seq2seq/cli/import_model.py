"""seq2seq-import: a Hugging Face MarianMT or M2M100 / NLLB model directory -> one of our checkpoints.

The checkpoint is an ordinary one: seq2seq-translate, seq2seq-serve, seq2seq-export and fine-tuning
(seq2seq-train init_from=...) take it like a trained model's (seq2seq.interop.huggingface_import).

seq2seq-import input_dir=opus-mt-en-es output=models/opus-en-es.pt
seq2seq-import input_dir=nllb-200-distilled-600M output=models/nllb.pt src_lang=eng_Latn tgt_lang=spa_Latn

input= is input_dir's old name (renamed in this release: `input` is a text file in every other command),
accepted until the next release.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from hydra.utils import to_absolute_path
from omegaconf import DictConfig

from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.errors import UserError
from seq2seq.interop.huggingface_import import import_huggingface

log = logging.getLogger("seq2seq.import")


def _optional_text(cfg: DictConfig, key: str) -> str | None:
    value = cfg.get(key)
    if value is not None and not isinstance(value, str):
        raise UserError(f"{key}={value!r} must be a language code (text), or left out")
    return value


@exit_on_user_error
def import_model(cfg: DictConfig) -> Path:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    force = cfg.get("force", False)
    if not isinstance(force, bool):
        raise UserError(f"force={force!r} must be true or false")
    source, output = Path(to_absolute_path(str(cfg.input_dir))), Path(to_absolute_path(str(cfg.output)))
    return import_huggingface(
        source, output, src_lang=_optional_text(cfg, "src_lang"), tgt_lang=_optional_text(cfg, "tgt_lang"),
        force=force,
    )  # fmt: skip


main = command_main(import_model, command="seq2seq-import", config_name="import")


if __name__ == "__main__":
    main()

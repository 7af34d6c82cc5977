"""seq2seq-backtranslate: monolingual text and a reverse model in, synthetic parallel data out.

seq2seq-backtranslate checkpoint=runs/bible.es-en/best.pt input=mono.es output_dir=bt/mono
seq2seq-backtranslate checkpoint=exported/es-en input=mono.es output_dir=bt/mono quantization=int8 \
    decode=sample decode.top_k=10

Reads the config, builds the typed settings and the reverse model's Translator, and calls
seq2seq.corpus_translation.backtranslate, the Python API (docs/back-translation.md).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from omegaconf import DictConfig

from seq2seq.cli.config.corpus_settings import corpus_settings
from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.cli.config.setting_checks import log_level_setting
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.corpus_translation import BacktranslateSettings, check_input
from seq2seq.corpus_translation import backtranslate as backtranslate_corpus


@exit_on_user_error
def backtranslate(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=log_level_setting(cfg.log_level),
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    settings = corpus_settings(cfg, BacktranslateSettings)
    checked = check_input(settings)  # the whole input read before a model loads or a file is written
    translator = translator_from_config(cfg, checkpoint=settings.checkpoint)
    return backtranslate_corpus(translator, settings, checked=checked)


main = command_main(backtranslate, command="seq2seq-backtranslate", config_name="backtranslate")


if __name__ == "__main__":
    main()

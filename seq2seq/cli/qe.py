"""seq2seq-qe: score translations with a trained QE model, one score per line, no reference needed.

seq2seq-qe checkpoint=runs/qe/best.pt input=test.en hypotheses=test.hyp > test.qe

quiet=true is log_level=warning under the one verbosity setting's name (renamed in this release), accepted
until the next release.
"""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig

from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.cli.config.paths import absolute
from seq2seq.cli.config.setting_checks import log_level_setting
from seq2seq.devices import pick_device
from seq2seq.errors import UserError
from seq2seq.inference.quality import QualityEstimator
from seq2seq.inference.text_files import read_lines, write_lines
from seq2seq.inference.text_input import clean_line
from seq2seq.precision import check_precision, resolve_precision

log = logging.getLogger("seq2seq.qe")


@exit_on_user_error
def score_file(cfg: DictConfig) -> None:
    logging.basicConfig(stream=sys.stderr, level=log_level_setting(cfg.log_level),
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")  # fmt: skip
    check_precision(str(cfg.precision))  # before any file is read
    if str(cfg.input) == "-" and str(cfg.hypotheses) == "-":
        raise UserError("input and hypotheses cannot both be stdin; pass at least one of them as a file")
    sources = read_lines(absolute(cfg.input), str(cfg.encoding_errors))
    translations = read_lines(absolute(cfg.hypotheses), str(cfg.encoding_errors))
    if len(sources) != len(translations):
        raise UserError(
            f"input={cfg.input} has {len(sources)} lines but hypotheses={cfg.hypotheses} has "
            f"{len(translations)}; give one translation (or an empty line) per source line"
        )
    device = pick_device(str(cfg.device))
    estimator = QualityEstimator.from_checkpoint(
        hydra.utils.to_absolute_path(str(cfg.checkpoint)), device=device,
        precision=resolve_precision(str(cfg.precision), device, key="precision"),
    )  # fmt: skip
    scores = estimator.score([clean_line(s) for s in sources], [clean_line(t) for t in translations],
                             max_tokens=int(cfg.max_tokens))  # fmt: skip
    empty = sum(score is None for score in scores)
    if empty:
        log.info("%d line(s) with an empty source or translation get an empty line", empty)
    write_lines(absolute(str(cfg.output)), ["" if score is None else f"{score:.4f}" for score in scores])


main = command_main(score_file, command="seq2seq-qe", config_name="qe")


if __name__ == "__main__":
    main()

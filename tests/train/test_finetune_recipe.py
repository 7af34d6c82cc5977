"""The fine-tuning recipe: the constant schedule, experiment=finetune's settings, and the starting
model's validation before update 1 (a baseline: history and report at update 0, no best.pt)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from test_loop import make_trainer

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.schemas import register_schemas
from seq2seq.errors import UserError
from seq2seq.train.schedules import constant

register_schemas()


def test_the_constant_schedule_warms_up_linearly_then_stays() -> None:
    rates = [constant(step, peak_lr=1e-4, warmup=4) for step in range(1, 9)]
    assert rates == pytest.approx([2.5e-5, 5e-5, 7.5e-5, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4])
    assert constant(1, peak_lr=3e-5) == 3e-5  # warmup=1: no warmup
    for bad in ({"step": 0}, {"warmup": 0}, {"peak_lr": 0.0}):
        with pytest.raises(UserError):
            constant(**{"step": 1, "peak_lr": 1e-4, "warmup": 2, **bad})


def test_experiment_finetune_composes_the_recipe() -> None:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("train", overrides=["experiment=finetune", "init_from=start.pt"])
    assert cfg.schedule._target_ == "seq2seq.train.schedules.constant"
    assert 5e-5 <= cfg.schedule.peak_lr <= 1e-4 and 100 <= cfg.schedule.warmup <= 500
    assert cfg.loss.epsilon == 0.1 and cfg.trainer.early_stop_patience  # the default loss's smoothing
    assert cfg.trainer.validate_every and cfg.init_from == "start.pt"


class Recorded:
    """A validation function: what it was called with, and made-up scores."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, model, step: int) -> dict:
        self.calls.append(step)
        return {"loss": 3.0 - len(self.calls) * 0.1, "bleu": 1.0, "chrf": 2.0}


def test_the_starting_model_is_validated_before_update_1_as_a_baseline(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, max_updates=2, validate_every=1)
    trainer.validate_fn = Recorded()
    trainer.validate_start()
    assert trainer.state.history == [{"step": 0, "minutes": 0.0, "loss": 2.9, "bleu": 1.0, "chrf": 2.0}]
    assert trainer.state.best_bleu is None and not (tmp_path / "best.pt").exists()
    trainer.fit()
    assert trainer.validate_fn.calls == [0, 1, 2]
    assert [record["step"] for record in trainer.state.history] == [0, 1, 2]
    assert trainer.state.best_bleu == 1.0 and trainer.state.validations_without_improvement == 1
    with pytest.raises(RuntimeError, match="not started"):
        trainer.validate_start()

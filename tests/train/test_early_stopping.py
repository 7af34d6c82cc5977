"""Early stopping: training stops after exactly `early_stop_patience` validations without a better BLEU."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_loop import make_trainer


@pytest.mark.slow
def test_early_stopping_after_exactly_patience_validations_without_improvement(tmp_path: Path) -> None:
    scores = iter([10.0, 12.0, 11.0, 12.0, 11.5, 30.0, 40.0])  # 12 at update 2, then three without gain
    trainer = make_trainer(tmp_path, max_updates=20)
    trainer.options.validate_every, trainer.options.early_stop_patience = 1, 3
    trainer.validate_fn = lambda model, step: {"bleu": next(scores), "loss": 1.0}
    state = trainer.fit()
    assert state.step == 5 and [h["bleu"] for h in state.history] == [10.0, 12.0, 11.0, 12.0, 11.5]
    assert state.best_bleu == 12.0 and trainer.stop_requested.startswith("no dev BLEU")

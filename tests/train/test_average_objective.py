"""trainer.average_last's objective: only the run's own checkpoints are averaged (none numbered after its
final update), and with too few of them the final weights are scored the same way instead."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from seq2seq.checkpoint import save_checkpoint
from seq2seq.train.averaging import average_and_validate


def _checkpoints(run_dir: Path, steps: list[int]) -> None:
    run_dir.mkdir()
    for step in steps:
        save_checkpoint(
            run_dir / f"checkpoint_{step}.pt", {"model": {"weight": torch.full((1, 1), float(step))}}
        )


def test_averaging_takes_only_checkpoints_up_to_the_runs_final_update(tmp_path: Path) -> None:
    _checkpoints(tmp_path / "run", [2, 4, 6, 9000])
    model, seen = nn.Linear(1, 1, bias=False), []

    def validate(m: nn.Module, step: int, *, all_sentences: bool) -> dict[str, float]:
        seen.append((float(m.weight.detach()), step, all_sentences))
        return {"loss": 1.0, "bleu": 7.0}

    record = average_and_validate(tmp_path / "run", model, validate, last=2, step=6, dev_pairs=(20, 20))
    assert seen == [(5.0, 6, True)] and record["steps"] == [4, 6] and record["averaged"] is True
    assert (record["dev_pairs"], record["dev_pairs_left_out"], record["bleu"]) == (20, 0, 7.0)
    seen.clear()
    model.weight.data.fill_(3.0)  # the final weights, scored as they are when too few to average
    record = average_and_validate(tmp_path / "run", model, validate, last=2, step=3, dev_pairs=(19, 20))
    assert seen == [(3.0, 3, True)] and record["steps"] == [3] and record["averaged"] is False
    assert record["checkpoint"] == str(tmp_path / "run" / "last.pt") and record["dev_pairs_left_out"] == 1

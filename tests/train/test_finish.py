"""The end of a run: averaging by fraction takes the right weights, and the checkpoint to translate is
whichever of the average and best.pt scores the higher dev BLEU (here a stub validator whose BLEU is the
model's weight, so each can be made to win)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.train.finish import FinishSettings, finish_run, objective

FRACTION = FinishSettings(average_fraction=0.5, snapshot_every=2)


def weights(value: float) -> dict[str, torch.Tensor]:
    return {"weight": torch.full((1, 1), float(value))}


def run_dir(tmp_path: Path, *, best: tuple[int, float], snapshots: dict[int, float], last: float) -> Path:
    """A run that ended at update 10: its snapshots, best.pt (step, weight) and last.pt."""
    directory = tmp_path / "run"
    directory.mkdir()
    for step, value in snapshots.items():
        save_checkpoint(directory / f"snapshot_{step}.pt", {"model": weights(value), "step": step})
    save_checkpoint(directory / "best.pt", {"model": weights(best[1]), "step": best[0]})
    save_checkpoint(directory / "last.pt", {"model": weights(last), "step": 10})
    return directory


class WeightIsBleu:
    """A validator stub: dev BLEU = the model's weight; remembers what it scored."""

    def __init__(self) -> None:
        self.scored: list[float] = []

    def __call__(self, model: nn.Module, step: int, *, all_sentences: bool = False) -> dict[str, Any]:
        assert all_sentences  # the final choice is made on the whole dev set
        value = float(model.weight.detach())
        self.scored.append(value)
        return {"loss": 10.0 - value, "bleu": value}


def finish(directory: Path, settings: FinishSettings = FRACTION) -> tuple[dict[str, Any], WeightIsBleu]:
    model, validate = nn.Linear(1, 1, bias=False), WeightIsBleu()
    model.weight.data.fill_(float(load_checkpoint(directory / "last.pt")["model"]["weight"]))
    return finish_run(directory, model, validate, settings, step=10, dev_pairs=(20, 20)), validate


def test_the_average_of_the_last_fraction_wins_when_it_scores_higher(tmp_path: Path) -> None:
    # fraction 0.5 of 10 updates: the window is [5, 10]; snapshots 6 and 8 with last.pt (update 10)
    directory = run_dir(tmp_path, best=(4, 5.0), snapshots={2: 100.0, 4: 100.0, 6: 6.0, 8: 8.0}, last=13.0)
    finished, validate = finish(directory)
    assert finished["averaged"]["steps"] == [6, 8, 10] and validate.scored == [9.0, 5.0]  # (6+8+13)/3
    averaged = load_checkpoint(directory / "averaged.pt")
    torch.testing.assert_close(averaged["model"]["weight"], torch.full((1, 1), 9.0))
    final = finished["final"]
    assert final["checkpoint"] == str(directory / "averaged.pt") and final["bleu"] == 9.0
    assert {name: c["bleu"] for name, c in final["candidates"].items()} == {
        "averaged.pt": 9.0,
        "best.pt": 5.0,
    }
    assert objective(finished, best_bleu=5.0) == 9.0  # what a sweep optimises
    assert not (directory / "snapshot_2.pt").exists() and not (directory / "snapshot_4.pt").exists()


def test_best_pt_wins_when_it_scores_higher(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, best=(4, 12.0), snapshots={6: 6.0, 8: 8.0}, last=13.0)
    finished, _ = finish(directory)
    final = finished["final"]
    assert final["checkpoint"] == str(directory / "best.pt") and final["bleu"] == 12.0
    assert final["candidates"]["averaged.pt"]["bleu"] == 9.0
    assert objective(finished, best_bleu=3.0) == 12.0


def test_a_tie_goes_to_the_average(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, best=(4, 9.0), snapshots={6: 6.0, 8: 8.0}, last=13.0)
    assert finish(directory)[0]["final"]["checkpoint"] == str(directory / "averaged.pt")


def test_with_nothing_to_average_last_pt_and_best_pt_are_compared(tmp_path: Path) -> None:
    """No snapshot in the window: last.pt is the average's stand-in; best.pt of the same update (the
    same weights) is not decoded twice."""
    directory = run_dir(tmp_path, best=(10, 13.0), snapshots={2: 2.0}, last=13.0)
    finished, validate = finish(directory)
    assert finished["averaged"]["averaged"] is False and validate.scored == [13.0]
    assert not (directory / "averaged.pt").exists()
    assert set(finished["final"]["candidates"]) == {"last.pt", "best.pt"}


def test_average_last_ends_with_the_same_choice(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, best=(4, 12.0), snapshots={}, last=13.0)
    for step, value in ((8, 1.0), (10, 13.0)):
        save_checkpoint(directory / f"checkpoint_{step}.pt", {"model": weights(value), "step": step})
    finished, validate = finish(directory, FinishSettings(average_last=2))
    assert finished["averaged"]["steps"] == [8, 10] and validate.scored == [7.0, 12.0]
    assert finished["final"]["checkpoint"] == str(directory / "best.pt")


def test_without_averaging_nothing_is_chosen(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, best=(4, 12.0), snapshots={}, last=13.0)
    finished, validate = finish(directory, FinishSettings())
    assert finished["averaged"] is None and finished["final"] is None and validate.scored == []
    assert objective(finished, best_bleu=3.5) == 3.5


@pytest.mark.parametrize(
    ("settings", "trainer", "message"),
    [
        (FinishSettings(average_last=2, average_fraction=0.2), {}, "two ways to average; set one"),
        (FinishSettings(average_fraction=1.2), {}, "trainer.average_fraction=1.2 must be in (0, 1]"),
        (FinishSettings(tune_decoding=True), {"validate_bleu": False}, "set trainer.validate_bleu=true"),
        (FinishSettings(tune_decoding=True, tune_decoding_sentences=0), {"validate_bleu": True},
         "trainer.tune_decoding_sentences=0 must be at least 1"),
    ],
)  # fmt: skip
def test_settings_that_cannot_work_are_refused(settings: FinishSettings, trainer: dict, message: str) -> None:
    from seq2seq.errors import UserError

    with pytest.raises(UserError) as error:
        settings.check({"validate_bleu": True, "save_every": 2, "keep_last": 5, **trainer})
    assert message in str(error.value) and "\n" not in str(error.value)

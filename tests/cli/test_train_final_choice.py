"""The end of a seq2seq-train run with trainer.average_fraction and trainer.tune_decoding: the last
fraction of the updates averaged from weights-only snapshots (pruned as the run goes, kept across a
resume), the checkpoint to translate chosen by whole-dev-set BLEU, decoding settings stored in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from commands import error_line, run_module
from toy_corpus import tiny_train_overrides

from seq2seq.checkpoint import load_checkpoint, save_checkpoint

FRACTION = ["trainer.average_fraction=0.5", "trainer.snapshot_every=2", "trainer.validate_max_sentences=3"]


def train(corpus: Path, run_dir: Path, *settings: str, updates: int = 10):
    overrides = tiny_train_overrides(corpus, run_dir, f"trainer.max_updates={updates}", *settings)
    result = run_module("seq2seq.cli.train", *overrides, cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def snapshot_steps(run_dir: Path) -> list[int]:
    return sorted(int(p.stem.split("_")[1]) for p in run_dir.glob("snapshot_*.pt"))


@pytest.mark.slow
def test_the_last_fraction_is_averaged_chosen_or_not_and_tuned(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    tuning = ["trainer.tune_decoding=true", "trainer.tune_decoding_sentences=8"]
    result = train(corpus, run_dir, *FRACTION, *tuning)
    # 10 updates, fraction 0.5: the window is updates 5-10; snapshots every 2 updates, the older pruned
    assert snapshot_steps(run_dir) == [6, 8, 10]
    snapshot = load_checkpoint(run_dir / "snapshot_8.pt")
    assert set(snapshot) == {"model", "step", "snapshot", "format_version"}  # weights only
    averaged = load_checkpoint(run_dir / "averaged.pt")["model"]
    inputs = [
        load_checkpoint(run_dir / name)["model"] for name in ("snapshot_6.pt", "snapshot_8.pt", "last.pt")
    ]
    for key, value in averaged.items():
        torch.testing.assert_close(value, sum(state[key] for state in inputs) / 3)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["averaged"]["steps"] == [6, 8, 10] and summary["averaged"]["dev_pairs"] == 20
    final, candidates = summary["final"], summary["final"]["candidates"]
    assert set(candidates) == {"averaged.pt", "best.pt"}
    averaged_wins = candidates["averaged.pt"]["bleu"] >= candidates["best.pt"]["bleu"]  # ties: the average
    winner = "averaged.pt" if averaged_wins else "best.pt"
    assert final["checkpoint"] == str(run_dir / winner) == summary["checkpoint"]
    assert final["bleu"] == candidates[winner]["bleu"] == max(c["bleu"] for c in candidates.values())
    # trainer.tune_decoding: settings tuned on 8 dev sentences, stored in the chosen checkpoint
    decoding = summary["decoding"]
    assert decoding["checkpoint"] == final["checkpoint"] and decoding["sentences"] == 8
    assert decoding["seconds"] > 0 and decoding["beam_size"] == 5 and summary["finish_seconds"] > 0
    stored = load_checkpoint(Path(final["checkpoint"]))["tuned_decoding"]
    assert stored == {key: value for key, value in decoding.items() if key != "checkpoint"}
    log = result.stdout + result.stderr
    assert "decoding tuned on 8 dev sentences, beam 5" in log and f"stored in {winner}" in log
    assert f"final checkpoint: {winner}, by its higher whole-dev-set BLEU" in log
    translated = run_module("seq2seq.cli.translate", f"checkpoint={final['checkpoint']}", "input=-",
                            cwd=tmp_path, stdin=b"the man sees the dog\n")  # fmt: skip
    assert translated.returncode == 0 and b"the model's own (" in translated.stderr


@pytest.mark.slow
def test_a_resumed_run_averages_what_an_uninterrupted_run_does(corpus: Path, tmp_path: Path) -> None:
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    whole.mkdir()
    parts.mkdir()
    train(corpus, whole / "run", *FRACTION)
    train(corpus, parts / "run", *FRACTION, updates=7)
    assert snapshot_steps(parts / "run") == [4, 6]  # 7 updates: the window is updates 4-7
    # a snapshot after last.pt's update, as an interrupted run leaves it: never averaged, rewritten
    save_checkpoint(parts / "run" / "snapshot_8.pt", {"model": {}, "step": 8, "snapshot": True})
    result = train(corpus, parts / "run", *FRACTION)
    assert "removed snapshot(s) of update(s) 8, written after update 7" in result.stdout + result.stderr
    assert snapshot_steps(parts / "run") == snapshot_steps(whole / "run") == [6, 8, 10]
    ours, theirs = (load_checkpoint(run / "run" / "averaged.pt")["model"] for run in (parts, whole))
    assert all(torch.equal(ours[key], theirs[key]) for key in theirs)


@pytest.mark.slow
def test_a_new_run_is_refused_among_another_runs_snapshots(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    save_checkpoint(run_dir / "snapshot_40.pt", {"model": {}, "step": 40, "snapshot": True})
    overrides = tiny_train_overrides(corpus, run_dir)
    result = run_module("seq2seq.cli.train", *overrides, *FRACTION, cwd=tmp_path)
    assert result.returncode == 2 and "holds another run's files (snapshot_40.pt)" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["trainer.average_fraction=0"], "trainer.average_fraction=0.0 must be in (0, 1]"),
        (["trainer.average_fraction=1.5"], "trainer.average_fraction=1.5 must be in (0, 1]"),
        (["trainer.average_fraction=0.2", "trainer.average_last=5"], "two ways to average; set one"),
        (["trainer.average_fraction=0.2", "trainer.snapshot_every=0"], "trainer.snapshot_every=0 must be at"),
        (["trainer.average_fraction=0.2", "trainer.max_snapshots=1"], "trainer.max_snapshots=1 must be at"),
        (["trainer.tune_decoding=true", "trainer.validate_bleu=false"], "set trainer.validate_bleu=true"),
        (["trainer.tune_decoding=true", "trainer.tune_decoding_sentences=0"], "must be at least 1 (null"),
    ],
)
def test_settings_that_cannot_work_are_one_line_errors(
    corpus: Path, tmp_path: Path, settings: list[str], message: str
) -> None:
    overrides = tiny_train_overrides(corpus, tmp_path / "run", *settings)
    assert message in error_line(run_module("seq2seq.cli.train", *overrides, cwd=tmp_path))
    assert not (tmp_path / "run" / "last.pt").exists()

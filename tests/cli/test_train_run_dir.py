"""A run directory holds one run: a fresh start never mixes with another run's files, a resume continues
the same settings and corpus, and the tokenizer is reused only for the corpus it was trained on."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from commands import error_line, run_module
from toy_corpus import NARROWER, tiny_train_overrides, write_toy_corpus

from seq2seq.errors import UserError
from seq2seq.train.run_dir import hold_run_directory, release_run_directory


def run_train(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_module("seq2seq.cli.train", *args, cwd=cwd)


@contextmanager
def held_by_another_process(run_dir: Path) -> Iterator[int]:
    """Within the block, another process holds `run_dir`'s lock (seq2seq.train.run_dir); yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from seq2seq.train.run_dir import hold_run_directory; "
         f"hold_run_directory({str(run_dir)!r}); print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def contents(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and p.suffix in (".pt", ".json")
    }


@pytest.mark.slow
@pytest.mark.parametrize("leftovers", ["tokenizer only", "whole run"])
def test_a_run_directory_never_reuses_the_tokenizer_of_another_corpus(
    finished_run: Path, corpus: Path, tmp_path: Path, leftovers: str
) -> None:
    """Item: the tokenizer record's corpus hash is compared, not only its settings."""
    other = write_toy_corpus(tmp_path / "other", seed=1)
    run_dir = tmp_path / "run"
    if leftovers == "whole run":
        shutil.copytree(finished_run, run_dir)
    else:
        run_dir.mkdir()
        for name in ("spm.model", "tokenizer.json"):
            shutil.copy(finished_run / name, run_dir / name)
    tokenizer = (run_dir / "spm.model").read_bytes()
    line = error_line(run_train(*tiny_train_overrides(other, run_dir, "trainer.max_updates=6"), cwd=tmp_path))
    assert str(corpus / "train.en") in line and str(other / "train.en") in line, line
    assert "run_name" in line
    assert (run_dir / "spm.model").read_bytes() == tokenizer


@pytest.mark.slow
@pytest.mark.parametrize(
    ("resume", "removed"),
    [("none", []), ("none", ["last.pt", "best.pt", "checkpoint_2.pt", "checkpoint_9000.pt"]),
     ("auto", ["last.pt"])],
)  # fmt: skip
def test_a_fresh_run_refuses_a_directory_holding_another_runs_files(
    run_dir: Path, corpus: Path, tmp_path: Path, resume: str, removed: list[str]
) -> None:
    """Item: a fresh start (resume=none, or auto without last.pt) among another run's checkpoints would
    have rotation delete its own checkpoints and averaging pick the old ones; it is refused up front."""
    (run_dir / "checkpoint_4.pt").rename(run_dir / "checkpoint_9000.pt")
    for name in removed:
        (run_dir / name).unlink()
    before = contents(run_dir)
    settings = [f"trainer.resume={resume}", "trainer.keep_last=2"]
    line = error_line(run_train(*tiny_train_overrides(corpus, run_dir), *settings, cwd=tmp_path))
    assert "another run's files" in line and "run_name" in line, line
    # Continuing that run is only offered when it has a last.pt to continue from.
    offered = "continue that run with trainer.resume=auto" in line
    assert offered == (resume == "none" and "last.pt" not in removed), line
    assert contents(run_dir) == before  # nothing deleted, nothing overwritten


@pytest.mark.slow
def test_resuming_a_directory_with_checkpoints_newer_than_last_pt_is_refused(
    run_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    """A directory where an earlier run left checkpoint_9000.pt beside this run's last.pt (update 4)."""
    shutil.copy(run_dir / "checkpoint_4.pt", run_dir / "checkpoint_9000.pt")
    before = contents(run_dir)
    overrides = tiny_train_overrides(corpus, run_dir, "trainer.max_updates=6", "trainer.keep_last=2")
    line = error_line(run_train(*overrides, cwd=tmp_path))
    assert "checkpoint_9000.pt" in line and "run_name" in line, line
    assert contents(run_dir) == before


@pytest.mark.slow
def test_an_explicit_checkpoint_starts_a_run_only_in_a_directory_of_its_own(
    finished_run: Path, corpus: Path, tmp_path: Path
) -> None:
    """trainer.resume=FILE continues FILE's run in a new directory, never among another run's files."""
    occupied = tmp_path / "occupied"
    shutil.copytree(finished_run, occupied)
    before = contents(occupied)
    start = f"trainer.resume={finished_run / 'checkpoint_2.pt'}"
    line = error_line(
        run_train(*tiny_train_overrides(corpus, occupied, start, "trainer.max_updates=6"), cwd=tmp_path)
    )
    assert "another run's files" in line and "run_name" in line, line
    assert contents(occupied) == before
    fresh = tmp_path / "fresh"
    result = run_train(*tiny_train_overrides(corpus, fresh, start, "trainer.max_updates=6"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in result.stdout + result.stderr
    assert [h["step"] for h in json.loads((fresh / "summary.json").read_text())["history"]] == [2, 4, 6]


@pytest.mark.slow
def test_resuming_with_other_model_or_data_settings_stops_naming_the_keys(
    run_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    """Item: another command under the same run_name no longer resumes (or reports "nothing to do" and
    writes its overrides beside the old run's scores)."""
    before = contents(run_dir)
    result = run_train(
        *tiny_train_overrides(corpus, run_dir), "schedule.scale=1.3", "schedule.warmup=3",
        "data.filter.max_tokens_per_side=100", cwd=tmp_path,
    )  # fmt: skip
    line = error_line(result)
    for change in ("schedule.scale: 1.0 → 1.3", "schedule.warmup: 2 → 3", "data.filter.max_tokens_per_side"):
        assert change in line, line
    assert "run_name" in line and "nothing to do" not in result.stdout + result.stderr
    assert contents(run_dir) == before


@pytest.mark.slow
def test_resuming_after_changing_budgets_and_moving_the_corpus_continues(
    finished_run: Path, run_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    """Budgets, validation, logging and the corpus's location may change on resume (its content may not)."""
    moved = tmp_path / "moved"
    shutil.copytree(corpus, moved, ignore=shutil.ignore_patterns("cache"))
    budgets = ["trainer.max_updates=6", "trainer.max_minutes=5", "trainer.log_every=3",
               "trainer.validate_max_sentences=5", "trainer.keep_last=3"]  # fmt: skip
    result = run_train(*tiny_train_overrides(moved, run_dir, *budgets), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "resumed from" in output and "at update 4" in output and "tokenizer: reusing" in output
    assert json.loads((run_dir / "summary.json").read_text())["updates"] == 6
    fingerprint = torch.load(run_dir / "last.pt", weights_only=True)["fingerprint"]
    assert fingerprint == torch.load(finished_run / "last.pt", weights_only=True)["fingerprint"]


@pytest.mark.slow
def test_a_checkpoint_without_a_fingerprint_resumes_with_a_warning(
    run_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    """Checkpoints written before fingerprints were recorded: resumed, but the settings are not compared
    (a model that does not fit still fails in one line)."""
    payload = torch.load(run_dir / "last.pt", weights_only=True)
    del payload["fingerprint"]
    torch.save(payload, run_dir / "last.pt")
    result = run_train(*tiny_train_overrides(corpus, run_dir, *NARROWER), cwd=tmp_path)
    assert "does not fit this model" in error_line(result)
    assert "no settings fingerprint" in result.stdout + result.stderr


@pytest.mark.slow
def test_two_processes_never_train_in_one_run_directory(corpus: Path, tmp_path: Path) -> None:
    """Item: a second training process in a directory another one trains in stops with one line naming
    the holder; the lock goes with the process that held it."""
    run_dir = tmp_path / "busy"
    with held_by_another_process(run_dir) as holder:
        overrides = tiny_train_overrides(corpus, run_dir, "trainer.max_updates=2")
        line = error_line(run_train(*overrides, cwd=tmp_path))
        assert f"is in use: process {holder} on" in line and "run_name" in line, line
        with pytest.raises(UserError, match=rf"is in use: process {holder} "):
            hold_run_directory(run_dir)
    hold_run_directory(run_dir)  # free again once its holder has gone, however it ended
    hold_run_directory(run_dir)  # and a process may ask again for what it holds
    release_run_directory(run_dir)
    # the refused command left its lock file and Hydra's log file (opened before the task runs), no .hydra/
    assert {p.name for p in run_dir.iterdir()} <= {".run.lock", "train.log"}


def tree(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "log_name", "overrides"),
    [("seq2seq.cli.train", "train.log", []),
     ("seq2seq.cli.qe_train", "qe_train.log", ["model=encoder_only_tiny", "data_dir=no_such_dir"])],
)  # fmt: skip
def test_a_refused_second_run_changes_nothing_in_the_held_directory(
    corpus: Path, tmp_path: Path, command: str, log_name: str, overrides: list[str]
) -> None:
    """Item: the second process used to be refused only after Hydra had rewritten the running run's
    .hydra/ records (its config.yaml then named the refused command's settings)."""
    run_dir = tmp_path / "busy"
    (run_dir / ".hydra").mkdir(parents=True)
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        (run_dir / ".hydra" / name).write_text(f"the running run's {name}\n", encoding="utf-8")
    (run_dir / log_name).write_text("the running run's log\n", encoding="utf-8")
    with held_by_another_process(run_dir) as holder:
        before = tree(run_dir)
        if command == "seq2seq.cli.train":
            arguments = tiny_train_overrides(corpus, run_dir, *NARROWER)
        else:
            arguments = [*overrides, f"hydra.run.dir={run_dir}", "model.d_model=32"]
        line = error_line(run_module(command, *arguments, cwd=tmp_path))
        assert f"is in use: process {holder} on" in line, line
        assert tree(run_dir) == before


@pytest.mark.slow
def test_a_run_writes_the_records_hydra_would_have_written(corpus: Path, tmp_path: Path) -> None:
    """.hydra/ is written by the command (after the lock), with Hydra's own files and contents: here
    Hydra writes its copy to another folder beside ours."""
    run_dir = tmp_path / "run"
    overrides = tiny_train_overrides(corpus, run_dir, "trainer.max_updates=1", "trainer.validate_every=1")
    result = run_train(*overrides, "hydra.output_subdir=.by_hydra", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    ours, theirs = tree(run_dir / ".hydra"), tree(run_dir / ".by_hydra")
    assert set(ours) == {"config.yaml", "hydra.yaml", "overrides.yaml"} and ours == theirs


@pytest.mark.slow
def test_resuming_with_a_corpus_weight_added_stops_naming_it(
    run_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    """Item: a run without weights resumed with +data.train.weight=3 trained on (the weight's key is in a
    fingerprint only when set, and keys only one side held were not compared)."""
    before = contents(run_dir)
    line = error_line(run_train(*tiny_train_overrides(corpus, run_dir, "+data.train.weight=3"), cwd=tmp_path))
    assert 'data.train_mixing: unset → [{"weight": 3}]' in line and "run_name" in line, line
    assert contents(run_dir) == before

"""seq2seq-train as a user runs it: a run, automatic resume, a tiny multirun, bad checkpoints, torchrun."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from commands import ENV, error_line, run_module
from omegaconf import OmegaConf
from tiny_models import TINY
from toy_corpus import NARROWER, tiny_train_overrides

from seq2seq.cli.config.data_config import training_corpora


def run_train(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_module("seq2seq.cli.train", *args, cwd=cwd)


@pytest.mark.slow
def test_a_run_writes_checkpoints_logs_and_summary(finished_run: Path) -> None:
    names = {p.name for p in finished_run.iterdir()}
    assert {
        "last.pt",
        "best.pt",
        "checkpoint_2.pt",
        "checkpoint_4.pt",
        "summary.json",
        "tensorboard",
    } <= names
    assert any(p.name.startswith("spm") or p.suffix == ".model" for p in finished_run.iterdir())
    summary = json.loads((finished_run / "summary.json").read_text())
    assert summary["updates"] == 4 and summary["parameters"] > 0
    assert [h["step"] for h in summary["history"]] == [2, 4]
    assert all(h["ppl"] > 1 and h["loss"] > 0 and 0 <= h["bleu"] <= 100 for h in summary["history"])
    assert list((finished_run / "tensorboard").glob("events.out.tfevents.*"))
    payload = torch.load(finished_run / "last.pt", weights_only=True)
    assert payload["step"] == 4 and payload["tokenizer"]["src"]
    assert payload["config"]["model"]["d_model"] == TINY["d_model"]


@pytest.mark.slow
def test_rerunning_the_same_command_resumes(run_dir: Path, corpus: Path, tmp_path: Path) -> None:
    result = run_train(*tiny_train_overrides(corpus, run_dir, "trainer.max_updates=6"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "resumed from" in output and "at update 4" in output
    assert json.loads((run_dir / "summary.json").read_text())["updates"] == 6


@pytest.mark.slow
def test_corrupt_checkpoint_is_a_one_line_error(run_dir: Path, corpus: Path, tmp_path: Path) -> None:
    data = (run_dir / "last.pt").read_bytes()
    (run_dir / "last.pt").write_bytes(data[: len(data) // 2])
    line = error_line(run_train(*tiny_train_overrides(corpus, run_dir), cwd=tmp_path))
    assert "corrupt or truncated" in line and "last.pt" in line


@pytest.mark.slow
def test_checkpoint_of_another_model_is_a_one_line_error(run_dir: Path, corpus: Path, tmp_path: Path) -> None:
    overrides = tiny_train_overrides(corpus, run_dir, *NARROWER)
    line = error_line(run_train(*overrides, cwd=tmp_path))
    assert (
        f"model.d_model: {TINY['d_model']} → {TINY['d_model'] // 2}" in line
        and "model.ffn_dim" in line
        and "last.pt" in line
    ), line


@pytest.mark.slow
def test_tiny_multirun_completes_and_reports(corpus: Path, tmp_path: Path) -> None:
    overrides = tiny_train_overrides(corpus, None)
    sweep = ["-m", "model/positional=sinusoidal,rope", f"hydra.sweep.dir={tmp_path}/sweep"]
    result = run_train(*sweep, *overrides, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    summaries = sorted((tmp_path / "sweep").glob("*/summary.json"))
    assert len(summaries) == 2
    report = subprocess.run(
        [sys.executable, "scripts/sweep_report.py", str(tmp_path / "sweep")],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.returncode == 0, report.stderr
    assert "model/positional" in report.stdout and "rope" in report.stdout and "sinusoidal" in report.stdout
    assert (tmp_path / "sweep" / "report.png").stat().st_size > 1000


@pytest.mark.slow
def test_ctrl_c_in_a_sweep_saves_the_trial_and_stops_the_sweep(corpus: Path, tmp_path: Path) -> None:
    """SIGINT ends the running job cleanly (last.pt saved) and the whole multirun with status 130,
    instead of starting the next job."""
    overrides = tiny_train_overrides(corpus, None, "trainer.max_updates=100000")
    sweep = ["-m", "seed=1,2", f"hydra.sweep.dir={tmp_path}/sweep"]
    command = [sys.executable, "-m", "seq2seq.cli.train", *sweep, *overrides]
    process = subprocess.Popen(command, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log_file = tmp_path / "sweep" / "0" / "train.log"
    deadline = time.monotonic() + 120
    while not (log_file.is_file() and "update 3 |" in log_file.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-3000:]
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGINT, stderr[-3000:]
    assert (tmp_path / "sweep" / "0" / "last.pt").is_file()
    assert not (tmp_path / "sweep" / "1").exists()  # the sweep's second job never started
    assert "stopped by signal SIGINT" in log_file.read_text()


@pytest.mark.slow
def test_torchrun_two_processes_on_cpu(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "ddp"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_port=29533",
        "-m",
        "seq2seq.cli.train",
        *tiny_train_overrides(corpus, run_dir),
        "trainer.device=cpu",
    ]
    result = subprocess.run(
        command, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300, check=False
    )
    log = run_dir / "train.log"
    where = log.read_text()[-2000:] if log.is_file() else "no train.log"  # how far rank 0 got
    assert result.returncode == 0, f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}\n{where}"
    assert json.loads((run_dir / "summary.json").read_text())["updates"] == 4
    assert "joined the gloo process group" in result.stdout + result.stderr


@pytest.mark.slow
def test_a_composition_of_total_weight_zero_is_refused_before_anything_is_built(
    corpus: Path, tmp_path: Path
) -> None:
    """Item: weight 0 on the only corpus trained 0 updates and saved an untrained best.pt, exit 0."""
    run_dir = tmp_path / "run"
    extra = f"+data.extra_train=[{{src: {corpus / 'dev.en'}, tgt: {corpus / 'dev.es'}, weight: 0}}]"
    for zeros in (["+data.train.weight=0"], ["+data.train.weight=0", extra]):
        line = error_line(run_train(*tiny_train_overrides(corpus, run_dir), *zeros, cwd=tmp_path))
        assert "data.train.weight=0" in line and "give at least one corpus a weight above 0" in line, line
        assert ("data.extra_train[0].weight=0" in line) == (len(zeros) == 2), line
        assert {p.name for p in run_dir.iterdir()} <= {"train.log"}  # no tokenizer, arrays or checkpoint


def test_weight_zero_switches_off_one_of_several_corpora(corpus: Path) -> None:
    data = OmegaConf.create({
        "train": {"src": str(corpus / "train.en"), "tgt": str(corpus / "train.es")},
        "extra_train": [{"src": str(corpus / "dev.en"), "tgt": str(corpus / "dev.es"), "weight": 0}],
    })  # fmt: skip
    assert [spec.weight for spec in training_corpora(data)] == [1.0, 0.0]

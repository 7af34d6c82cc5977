"""Sweeps as a user runs them: an Optuna search that continues when re-run, trials in parallel processes
(joblib) and as submitit jobs, and the report of each."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from commands import run_module
from tiny_models import TINY
from toy_corpus import tiny_train_overrides

from seq2seq.cli.config.resolvers import available_cores

PLUGINS = "the sweep tests need the Hydra plugins: pip install -e '.[sweep]'"
for plugin in ("hydra_optuna_sweeper", "hydra_joblib_launcher", "hydra_submitit_launcher"):
    pytest.importorskip(f"hydra_plugins.{plugin}", reason=PLUGINS)
optuna = pytest.importorskip("optuna", reason=PLUGINS)

REPOSITORY = Path(__file__).parents[2]
SHAPE = [f"model.{key}={value}" for key, value in TINY.items()]  # fixed: the search would vary them


def toy_overrides(corpus: Path, *changes: str) -> list[str]:
    """The tiny training run of the other CLI tests, minus what a sweep decides: run dir and threads."""
    return tiny_train_overrides(corpus, None, "~trainer.num_threads", *changes)


def toy_search(corpus: Path, trials: int, *changes: str) -> list[str]:
    """A recipe search on the toy corpus: tiny model, 40 updates a trial (enough for dev BLEU to
    differ); only the learning rate, dropout and label smoothing are searched. `changes` replace
    the toy run's overrides of the same keys."""
    search = ["-m", "+sweep=recipe_search", f"hydra.sweeper.n_trials={trials}", "run_name=toy", *SHAPE]
    run = [
        "trainer.max_updates=40",
        "trainer.validate_every=20",
        "trainer.save_every=40",
        "schedule.warmup=10",
    ]
    return [*search, *toy_overrides(corpus, *run, *changes)]


def load_study(study_dir: Path) -> optuna.Study:
    return optuna.load_study(study_name="recipe_search", storage=f"sqlite:///{study_dir / 'study.db'}")


def only_trial(cwd: Path) -> tuple[optuna.trial.FrozenTrial, Path, dict]:
    """The one trial of a one-trial search run in `cwd`: Optuna's record, its run directory, its summary."""
    study_dir = cwd / "multirun" / "toy" / "recipe_search"
    (trial,) = load_study(study_dir).trials
    (run,) = (p for p in study_dir.iterdir() if p.is_dir())
    return trial, run / "0", json.loads((run / "0" / "summary.json").read_text())


def report(sweep_dir: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "scripts/sweep_report.py", str(sweep_dir)]
    return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def optuna_search(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two invocations of a 2-trial toy recipe search in one directory."""
    cwd = tmp_path_factory.mktemp("search")
    for _ in range(2):
        result = run_module("seq2seq.cli.train", *toy_search(corpus, trials=2), cwd=cwd)
        assert result.returncode == 0, result.stderr[-3000:]
    return cwd / "multirun" / "toy" / "recipe_search"


@pytest.mark.slow
def test_an_optuna_search_stores_its_study_and_continues_it(optuna_search: Path) -> None:
    study = load_study(optuna_search)
    assert [t.number for t in study.trials] == [0, 1, 2, 3]  # the second run added 2 trials to the first 2
    assert all(t.state.name == "COMPLETE" and 0 <= t.value <= 100 for t in study.trials)
    assert set(study.trials[0].params) == {"schedule.scale", "model.dropout", "loss.epsilon"}
    assert len({tuple(t.params.values()) for t in study.trials}) == 4  # no trial replays another
    assert len({t.value for t in study.trials}) > 1  # the settings matter, so "best first" is an order
    runs = sorted(p for p in optuna_search.iterdir() if p.is_dir())
    assert len(runs) == 2  # one timestamped directory per invocation, the first one's jobs kept
    for run in runs:
        summaries = [json.loads((run / job / "summary.json").read_text()) for job in ("0", "1")]
        assert all(s["updates"] == 40 for s in summaries)
        results = (run / "optimization_results.yaml").read_text()
        assert "best_params" in results and "schedule.scale" in results
    assert f"best_value: {study.best_value}" in (runs[1] / "optimization_results.yaml").read_text()


@pytest.mark.slow
def test_the_report_of_an_optuna_search(optuna_search: Path) -> None:
    result = report(optuna_search)
    assert result.returncode == 0, result.stderr
    with open(optuna_search / "report.csv", newline="") as handle:
        header, *rows = list(csv.reader(handle))
    study = load_study(optuna_search)
    assert len(rows) == len(study.trials) == 4  # one row per trial
    objective = header.index("objective (dev BLEU)")
    assert [float(row[objective]) for row in rows] == sorted(
        (round(t.value, 2) for t in study.trials), reverse=True
    )
    assert rows[0][header.index("trial")] == str(study.best_trial.number)  # best first
    assert {"schedule.scale", "model.dropout", "loss.epsilon", "tokens/s", "updates"} <= set(header)
    command = next(line for line in result.stdout.splitlines() if line.startswith("seq2seq-train "))
    assert f"schedule.scale={study.best_params['schedule.scale']:.4g}" in command
    assert f"model.d_model={TINY['d_model']}" in command and "sweep" not in command
    for picture in ("objective.png", "parallel_coordinates.png"):
        assert (optuna_search / picture).read_bytes()[:4] == b"\x89PNG"
        assert (optuna_search / picture).stat().st_size > 5000


@pytest.mark.slow
def test_the_report_of_an_optuna_sweep_without_its_study(optuna_search: Path, tmp_path: Path) -> None:
    first = sorted(p for p in optuna_search.iterdir() if p.is_dir())[0]
    shutil.copytree(first, tmp_path / "copy")  # jobs and optimization_results.yaml, no study.db
    result = report(tmp_path / "copy")
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "copy" / "report.csv", newline="") as handle:
        header, *rows = list(csv.reader(handle))
    objective = header.index("objective (dev BLEU)")
    assert len(rows) == 2 and float(rows[0][objective]) >= float(rows[1][objective])
    assert {"schedule.scale", "model.dropout", "loss.epsilon"} <= set(header)  # what the search varied


@pytest.mark.slow
@pytest.mark.parametrize(
    ("averaging", "steps"),
    [
        (["trainer.average_last=2"], [20, 40]),  # validated at 20 and 40: two numbered checkpoints
        (["trainer.average_fraction=0.2", "trainer.snapshot_every=4"], [32, 36, 40]),  # updates 32-40
    ],
)
def test_with_averaging_a_trial_is_scored_by_its_final_checkpoint(
    corpus: Path, tmp_path: Path, averaging: list[str], steps: list[int]
) -> None:
    """The trial's value is the whole-dev-set BLEU of the checkpoint it would translate: the average or
    best.pt, whichever scores higher."""
    result = run_module("seq2seq.cli.train", *toy_search(corpus, 1, *averaging), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    trial, run, summary = only_trial(tmp_path)
    assert summary["averaged"]["steps"] == steps and (run / "averaged.pt").is_file()
    candidates = summary["final"]["candidates"]
    assert trial.value == summary["final"]["bleu"] == max(c["bleu"] for c in candidates.values())
    assert candidates["averaged.pt"]["bleu"] == summary["averaged"]["bleu"]


@pytest.mark.slow
def test_a_trial_with_too_few_checkpoints_is_scored_by_its_last_checkpoint(
    corpus: Path, tmp_path: Path
) -> None:
    """What a sweeper optimises is the same metric with or without enough checkpoints to average."""
    changes = ["trainer.max_updates=2", "trainer.validate_every=2", "trainer.save_every=2",
               "trainer.average_last=2", "trainer.validate_max_sentences=3"]  # fmt: skip
    result = run_module("seq2seq.cli.train", *toy_search(corpus, 1, *changes), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    trial, run, summary = only_trial(tmp_path)
    record = summary["averaged"]
    assert record["checkpoint"] == str(run / "last.pt") and record["dev_pairs"] == 20
    # best.pt is last.pt's update here (2): the same weights, one score, and the trial's value
    assert summary["final"]["candidates"]["best.pt"]["bleu"] == record["bleu"] == trial.value


def enqueue(study_dir: Path, *settings: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "scripts/sweep_enqueue.py", str(study_dir), *settings]
    return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_a_queued_trial_is_the_next_one_the_search_runs(
    optuna_search: Path, corpus: Path, tmp_path: Path
) -> None:
    study_dir = tmp_path / "multirun" / "toy" / "recipe_search"
    study_dir.mkdir(parents=True)
    shutil.copy(optuna_search / "study.db", study_dir)  # a study with 4 trials, as a user would have
    queued = {"schedule.scale": 0.7, "model.dropout": 0.05, "loss.epsilon": 0.02}
    result = enqueue(study_dir, *(f"{key}={value}" for key, value in queued.items()))
    assert result.returncode == 0, result.stderr
    result = run_module("seq2seq.cli.train", *toy_search(corpus, trials=1), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    study = load_study(study_dir)
    assert [t.number for t in study.trials] == [0, 1, 2, 3, 4]
    assert study.trials[4].state.name == "COMPLETE" and study.trials[4].params == queued
    (run,) = (p for p in study_dir.iterdir() if p.is_dir())
    overrides = json.loads((run / "0" / "summary.json").read_text())["overrides"]
    assert {f"{key}={value}" for key, value in queued.items()} <= set(overrides)  # what it trained with


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings, message",
    [
        (["schedule.scale=9", "model.dropout=0.1", "loss.epsilon=0.1"], "schedule.scale=9.0 is outside"),
        (["schedule.scale=1", "model.dropout=0.1"], "missing: ['loss.epsilon']"),
        (["schedule.scale=1", "model.dropout=0.1", "loss.epsilon=0.1", "seed=3"], "not searched: ['seed']"),
        (["schedule.scale"], "'schedule.scale' is not KEY=VALUE"),
    ],
)
def test_a_trial_the_study_cannot_run_is_refused(
    optuna_search: Path, settings: list[str], message: str
) -> None:
    result = enqueue(optuna_search, *settings)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1  # one line, no traceback
    study = load_study(optuna_search)
    assert all(t.state.name == "COMPLETE" for t in study.trials)  # nothing was queued


@pytest.mark.slow
def test_queueing_without_a_study_says_how_to_start_one(tmp_path: Path) -> None:
    result = enqueue(tmp_path, "schedule.scale=1")
    assert result.returncode == 2
    assert (
        result.stderr == f"error: no study at {tmp_path / 'study.db'}: run the recipe once first "
        "(seq2seq-train -m +sweep=...), then queue trials in the directory that holds its study.db\n"
    )


@pytest.mark.slow
def test_joblib_runs_trials_in_processes_that_share_the_cores(corpus: Path, tmp_path: Path) -> None:
    launcher = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    search = ["-m", "+sweep=recipe_search", "hydra.sweeper.n_trials=2", "run_name=toy", *SHAPE, *launcher]
    cache = [f"data.cache_dir={tmp_path}/cache"]  # a cache miss: each job trains its tokenizer and encodes
    result = run_module("seq2seq.cli.train", *search, *toy_overrides(corpus), *cache, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in result.stdout + result.stderr  # the Optuna batch: 2 trials at once
    (run,) = (p for p in (tmp_path / "multirun" / "toy" / "recipe_search").iterdir() if p.is_dir())
    summaries = [json.loads((run / job / "summary.json").read_text()) for job in ("0", "1")]
    assert [s["updates"] for s in summaries] == [4, 4]
    share = max(1, available_cores() // 2)  # trainer.num_threads: ${seq2seq.threads_per_job:}
    assert [s["threads"] for s in summaries] == [share, share]


@pytest.mark.slow
def test_a_submitit_local_job_finishes(corpus: Path, tmp_path: Path) -> None:
    sweep = ["-m", "hydra/launcher=submitit_local", f"hydra.sweep.dir={tmp_path}/sweep"]
    result = run_module("seq2seq.cli.train", *sweep, *toy_overrides(corpus), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "sweep" / "0" / "summary.json").read_text())["updates"] == 4
    assert list((tmp_path / "sweep" / ".submitit").glob("*/*_0_log.out"))  # it ran as a submitit job

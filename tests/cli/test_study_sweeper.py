"""The study sweeper (hydra/sweeper=study): a new study's trial 0 is the recipe as composed, a trial a
stopped invocation left running is queued again (also after a real `kill -9` of the invocation in the
middle of a trial), and the AVX2 recipe study runs a trial end to end."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from commands import ENV, run_module
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from toy_corpus import tiny_train_overrides

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.train import check_targets  # registers the schemas and resolvers, as seq2seq-train does

PLUGINS = "the study sweeper needs the Hydra plugins: pip install -e '.[sweep]'"
pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason=PLUGINS)
optuna = pytest.importorskip("optuna", reason=PLUGINS)

from hydra_plugins.hydra_optuna_sweeper._impl import create_params_from_overrides  # noqa: E402

from seq2seq.cli.config import study_sweeper  # noqa: E402
from seq2seq.cli.config.study_sweeper import (  # noqa: E402
    PROCESS_ATTR,
    baseline_params,
    matching_value,
    requeue_interrupted,
)

# seq2seq-train with the rest of the arguments, killed with SIGKILL (as `kill -9`: no handler, no
# cleanup) once the second trainer of the invocation, its second trial's, has saved the update its first
# argument names: the invocation stops in the middle of that trial.
KILL_IN_SECOND_TRIAL = """
import os, runpy, signal, sys
from seq2seq.train import loop
step = int(sys.argv.pop(1))
trainers = []
save = loop.Trainer._save
def save_then_die(self, **kwargs):
    save(self, **kwargs)
    if not getattr(self, "counted", False):
        self.counted = True
        trainers.append(self.output_dir)
    if len(trainers) == 2 and self.state.step == step:
        os.kill(os.getpid(), signal.SIGKILL)
loop.Trainer._save = save_then_die
runpy.run_module("seq2seq.cli.train", run_name="__main__", alter_sys=True)
"""


def composed(*overrides: str, hydra: bool = True):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=hydra)


def space_of(cfg) -> dict:
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    space, fixed = create_params_from_overrides([f"{key}={value}" for key, value in params.items()])
    assert not fixed
    return space


def dead_pid() -> int:
    """A process id no process has: above the kernel's largest."""
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def test_a_list_setting_matches_the_choice_written_as_its_text() -> None:
    betas = optuna.distributions.CategoricalDistribution(["[0.9,0.98]", "[0.9,0.999]"])
    assert matching_value([0.9, 0.999], betas) == (True, "[0.9,0.999]")
    assert matching_value([0.9, 0.9], betas) == (False, [0.9, 0.9])
    tokens = optuna.distributions.CategoricalDistribution([2048, 4096])
    assert matching_value(4096.0, tokens) == (True, 4096) and matching_value(True, tokens)[0] is False
    assert matching_value(1, optuna.distributions.CategoricalDistribution([True]))[0] is False
    warmup = optuna.distributions.IntUniformDistribution(100, 800)
    assert matching_value(250, warmup) == (True, 250) and matching_value(90, warmup)[0] is False
    scale = optuna.distributions.LogUniformDistribution(0.5, 3.0)
    assert matching_value(1, scale) == (True, 1.0) and matching_value("1", scale)[0] is False


def test_the_avx2_study_starts_from_the_quickstart_fp32_recipe() -> None:
    check_targets(composed("+sweep=recipe_avx2", hydra=False))
    cfg = composed("+sweep=recipe_avx2")
    recipe = composed("experiment=cpu_fp32_30min", hydra=False)
    space = space_of(cfg)
    assert {
        "model.dropout",
        "model.attention_dropout",
        "model.activation_dropout",
        "loss.epsilon",
        "trainer.max_tokens",
        "schedule.scale",
        "schedule.warmup",
        "optim.betas",
        "data.tokenizer.vocab_size",
        "model.d_model",
        "model.ffn_dim",
        "model.encoder_layers",
        "model.decoder_layers",
        "trainer.validate_every_minutes",
    } == set(space)
    params, outside = baseline_params(cfg, space)
    assert outside == [] and params["optim.betas"] == "[0.9,0.98]"
    for key, value in params.items():  # trial 0 is the recipe: every searched key as it composes
        assert OmegaConf.select(recipe, key) == (json.loads(value) if key == "optim.betas" else value), key
    assert cfg.schedule.warmup == recipe.schedule.warmup == 250
    assert (cfg.trainer.max_minutes, cfg.trainer.precision, cfg.trainer.average_fraction) == (30, "fp32", 0.2)
    assert cfg.hydra.sweeper._target_ == "hydra_plugins.seq2seq_sweeper.study_sweeper.StudySweeper"
    assert cfg.hydra.sweeper.study_name == "recipe_avx2" and cfg.hydra.sweeper.direction == "maximize"
    for d_model in space["model.d_model"].choices:
        assert d_model % cfg.model.n_heads == 0


def test_a_value_outside_the_space_means_no_baseline() -> None:
    cfg = composed("+sweep=recipe_avx2", "schedule.warmup=2000")
    params, outside = baseline_params(cfg, space_of(cfg))
    assert outside == ["schedule.warmup=2000"]


def test_a_trial_whose_process_is_gone_is_queued_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_sweeper.socket, "gethostname", lambda: "here")
    study = optuna.create_study(
        storage=f"sqlite:///{tmp_path / 'study.db'}", study_name="s", direction="maximize"
    )
    distribution = optuna.distributions.UniformDistribution(0.0, 1.0)
    asked = {}
    for name, process in (
        ("gone", f"here:{dead_pid()}"),
        ("elsewhere", "there:1"),
        ("unmarked", None),
        ("finished", f"here:{dead_pid()}"),
    ):
        trial = study.ask()
        trial._suggest("x", distribution)
        if process:
            trial.set_system_attr(PROCESS_ATTR, process)
        asked[name] = trial
    study.tell(asked["finished"], 0.5)
    assert requeue_interrupted(study) == [asked["gone"].number]
    states = {name: study.trials[trial.number].state.name for name, trial in asked.items()}
    assert states == {"gone": "FAIL", "elsewhere": "RUNNING", "unmarked": "RUNNING", "finished": "COMPLETE"}
    waiting = study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    assert [t.system_attrs["fixed_params"] for t in waiting] == [{"x": asked["gone"].params["x"]}]
    assert requeue_interrupted(study) == []  # queued once
    # scripts/sweep_enqueue.py --requeue-running: the user knows nothing runs, wherever it was asked
    assert requeue_interrupted(study, everything_running=True) == [
        asked["elsewhere"].number,
        asked["unmarked"].number,
    ]
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
    assert len(study.get_trials(states=(optuna.trial.TrialState.WAITING,))) == 3


@pytest.mark.slow
def test_the_avx2_study_runs_its_baseline_as_trial_0_then_samples(corpus: Path, tmp_path: Path) -> None:
    """One invocation of two 1-update trials of the real study config on the toy corpus; the shape and
    the data are fixed to the toy run's, so the search varies the rest of the space."""
    toy = tiny_train_overrides(
        corpus,
        None,
        "~trainer.num_threads",
        "~schedule.warmup",
        "trainer.max_updates=1",
        "trainer.max_minutes=5",
    )
    shape = ["model.d_model=32", "model.ffn_dim=64", "model.encoder_layers=1", "model.decoder_layers=1"]
    search = ["-m", "+sweep=recipe_avx2", "hydra.sweeper.n_trials=2", "run_name=toy", *toy, *shape]
    result = run_module("seq2seq.cli.train", *search, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    study_dir = tmp_path / "multirun" / "toy" / "recipe_avx2"
    study = optuna.load_study(study_name="recipe_avx2", storage=f"sqlite:///{study_dir / 'study.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    searched = {
        "model.dropout",
        "model.attention_dropout",
        "model.activation_dropout",
        "loss.epsilon",
        "schedule.scale",
        "schedule.warmup",
        "optim.betas",
        "trainer.validate_every_minutes",
    }
    assert set(study.trials[0].params) == searched
    baseline = {
        "model.dropout": 0.1,
        "model.attention_dropout": 0.0,
        "model.activation_dropout": 0.0,
        "loss.epsilon": 0.1,
        "schedule.scale": 1.0,
        "schedule.warmup": 250,
        "optim.betas": "[0.9,0.98]",
        "trainer.validate_every_minutes": 5,
    }
    assert study.trials[0].params == baseline  # trial 0: the recipe as composed
    assert study.trials[1].params != baseline
    (run,) = (p for p in study_dir.iterdir() if p.is_dir())
    summary = json.loads((run / "0" / "summary.json").read_text())
    assert summary["updates"] == 1 and "optim.betas=[0.9,0.98]" in summary["overrides"]
    assert summary["final"]["bleu"] == study.trials[0].value
    assert "trial 0 is the recipe as composed" in result.stderr + result.stdout


def toy_study(corpus: Path, *changes: str) -> list[str]:
    """`seq2seq-train -m +sweep=recipe_avx2` on the toy corpus with 1-layer trials of the toy run's data:
    the search varies the rest of the space."""
    toy = tiny_train_overrides(
        corpus, None, "~trainer.num_threads", "~schedule.warmup", "trainer.max_minutes=5", *changes
    )
    shape = ["model.d_model=32", "model.ffn_dim=64", "model.encoder_layers=1", "model.decoder_layers=1"]
    return ["-m", "+sweep=recipe_avx2", "run_name=toy", *toy, *shape]


@pytest.mark.slow
def test_a_trial_killed_mid_way_is_trained_again_by_the_next_invocation(corpus: Path, tmp_path: Path) -> None:
    """The first invocation trains trial 0 (the baseline) and is killed with SIGKILL after update 1 of
    trial 1's 2 (a sampled trial); the same command again marks trial 1 FAIL and trains its settings
    from the start, as trial 2, before sampling anything new."""
    search = toy_study(corpus, "trainer.max_updates=2", "trainer.save_every=1")
    killed = subprocess.run(
        [sys.executable, "-c", KILL_IN_SECOND_TRIAL, "1", *search, "hydra.sweeper.n_trials=2"], cwd=tmp_path,
        env=ENV, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    study_dir = tmp_path / "multirun" / "toy" / "recipe_avx2"
    storage = f"sqlite:///{study_dir / 'study.db'}"
    before = optuna.load_study(study_name="recipe_avx2", storage=storage).trials
    assert [t.state.name for t in before] == ["COMPLETE", "RUNNING"]
    assert before[1].params != before[0].params  # sampled, not the baseline again
    (first,) = (p for p in study_dir.iterdir() if p.is_dir())
    assert (first / "1" / "checkpoint_1.pt").is_file() and not (first / "1" / "summary.json").exists()

    again = run_module("seq2seq.cli.train", *search, "hydra.sweeper.n_trials=1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    after = optuna.load_study(study_name="recipe_avx2", storage=storage).trials
    assert [t.state.name for t in after] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert after[2].params == before[1].params and after[0].value == before[0].value
    (second,) = (p for p in study_dir.iterdir() if p.is_dir() and p != first)
    summary = json.loads((second / "0" / "summary.json").read_text())
    assert summary["updates"] == 2 and summary["final"]["bleu"] == after[2].value  # from the start
    assert f"schedule.warmup={before[1].params['schedule.warmup']}" in summary["overrides"]
    assert f"optim.betas={before[1].params['optim.betas']}" in summary["overrides"]
    assert "trial 1 was interrupted" in again.stderr + again.stdout

"""Sweep configs and their resolvers: threads divided between parallel jobs, the Optuna batch size, the
study's storage and seed, and a search space of valid models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict

from seq2seq.cli.config import resolvers
from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.resolvers import launcher_jobs, local_parallel_jobs, sqlite_url, study_seed, threads_per_job
from seq2seq.cli.train import check_targets  # registers the schemas and resolvers, as seq2seq-train does

PLUGINS = "pip install -e '.[sweep]' installs the Hydra plugins"


def composed(*overrides: str, hydra: bool = True) -> DictConfig:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("train", overrides=["model=tiny", *overrides], return_hydra_config=hydra)


@pytest.fixture
def as_multirun_job() -> Iterator:
    """Makes a composed config the current Hydra job's, as a launcher does; restores the state after."""
    instance = HydraConfig.instance()
    saved = instance.cfg

    def activate(cfg: DictConfig) -> None:
        with open_dict(cfg):
            cfg.hydra.mode = RunMode.MULTIRUN
        instance.set_config(cfg)

    yield activate
    instance.cfg = saved


def test_threads_are_an_equal_share_of_the_cores_at_least_one() -> None:
    assert [threads_per_job(16, jobs) for jobs in (1, 2, 3, 16, 40)] == [16, 8, 5, 1, 1]


@pytest.mark.parametrize(
    ("launcher", "jobs"),
    [
        ({"n_jobs": 4}, 4),
        ({"n_jobs": -1}, 8),  # joblib: one per core
        ({"n_jobs": -2}, 7),  # joblib: all cores but one
        ({"array_parallelism": 3}, 3),  # submitit
        ({}, 1),  # the basic launcher
    ],
)
def test_launcher_jobs_count_as_joblib_and_submitit_do(launcher: dict, jobs: int) -> None:
    assert launcher_jobs(launcher, cores=8) == jobs


def test_only_processes_sharing_this_machine_divide_its_cores() -> None:
    optuna = {"n_jobs": 2}
    basic = {"max_batch_size": None}
    assert local_parallel_jobs({"launcher": {"n_jobs": 4}, "sweeper": basic}, cores=8) == 4
    assert local_parallel_jobs({"launcher": {"n_jobs": 4}, "sweeper": optuna}, cores=8) == 2  # batch of 2
    assert local_parallel_jobs({"launcher": {"array_parallelism": 4}, "sweeper": optuna}, cores=8) == 1
    assert local_parallel_jobs({"launcher": {}, "sweeper": basic}, cores=8) == 1


def test_joblib_jobs_get_their_share_of_threads_from_the_trainer_config(
    as_multirun_job, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resolvers, "available_cores", lambda: 16)
    cfg = composed("hydra/launcher=basic")
    assert cfg.trainer.num_threads is None  # not a multirun: PyTorch's default
    as_multirun_job(cfg)
    assert cfg.trainer.num_threads is None  # jobs one after another: PyTorch's default
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason=PLUGINS)
    cfg = composed("hydra/launcher=joblib", "hydra.launcher.n_jobs=3")
    as_multirun_job(cfg)
    assert cfg.trainer.num_threads == 5
    cfg = composed("hydra/launcher=joblib", "hydra.launcher.n_jobs=3", "trainer.num_threads=2")
    as_multirun_job(cfg)
    assert cfg.trainer.num_threads == 2  # an explicit setting wins


@pytest.mark.parametrize(
    ("launcher", "batch"),
    [([], 1), (["hydra/launcher=joblib", "hydra.launcher.n_jobs=3"], 3), (["hydra/launcher=slurm"], 4)],
)
def test_recipe_search_asks_as_many_trials_per_batch_as_run_at_once(launcher: list[str], batch: int) -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason=PLUGINS)
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason=PLUGINS)
    cfg = composed("+sweep=recipe_search", *launcher)
    assert cfg.hydra.sweeper.n_jobs == batch
    assert cfg.hydra.sweeper.direction == "maximize" and cfg.hydra.sweeper.study_name == "recipe_search"


def test_the_slurm_example_builds_a_submitit_launcher() -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason=PLUGINS)
    cfg = composed("hydra/launcher=slurm", "hydra.launcher.partition=cpu")
    launcher = instantiate(cfg.hydra.launcher)
    assert type(launcher).__name__ == "SlurmLauncher"
    assert launcher.params["partition"] == "cpu" and launcher.params["cpus_per_task"] == 16


def test_recipe_search_space_holds_only_valid_models() -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason=PLUGINS)
    from hydra_plugins.hydra_optuna_sweeper._impl import create_params_from_overrides

    cfg = composed("+sweep=recipe_search")
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    space, fixed = create_params_from_overrides([f"{key}={value}" for key, value in params.items()])
    assert not fixed and set(space) == set(params)
    assert {"schedule.scale", "schedule.warmup", "model.dropout", "loss.epsilon", "trainer.max_tokens",
            "data.tokenizer.vocab_size", "model.d_model", "model.ffn_dim"} <= set(space)  # fmt: skip
    for model in ("small", "base"):
        n_heads = composed(f"model={model}").model.n_heads
        for d_model in space["model.d_model"].choices:
            shape = [f"model={model}", f"model.d_model={d_model}", "model.encoder_layers=1"]
            cfg = composed(*shape, "model.decoder_layers=1", "model.ffn_dim=64", hydra=False)
            check_targets(cfg)
            built = instantiate(cfg.model, src_vocab_size=30, tgt_vocab_size=30, pad_id=0, _convert_="all")
            hidden = built(torch.tensor([[5, 3]]), torch.tensor([[2, 6]]), project=False)  # (1, 2, D)
            assert d_model % n_heads == 0 and hidden.shape == (1, 2, d_model)


def test_recipe_tune_searches_the_optimisation_around_the_default_in_a_study_of_its_own() -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason=PLUGINS)
    from hydra_plugins.hydra_optuna_sweeper._impl import create_params_from_overrides

    cfg = composed("+sweep=recipe_tune")
    search = composed("+sweep=recipe_search")
    assert cfg.hydra.sweeper.study_name != search.hydra.sweeper.study_name
    assert cfg.hydra.sweeper.storage != search.hydra.sweeper.storage
    assert cfg.hydra.sweep.dir.startswith(f"multirun/bible.en-es/{cfg.hydra.sweeper.study_name}/")
    # a trial's value is its final checkpoint's (the average of its last 20% of updates, or best.pt),
    # in a study apart from the one whose value was the average of the last 5 checkpoints
    assert (cfg.trainer.average_fraction, cfg.trainer.average_last) == (0.2, None)
    assert cfg.hydra.sweeper.study_name not in ("recipe_tune", "recipe_tune_avg5")
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    space, fixed = create_params_from_overrides([f"{key}={value}" for key, value in params.items()])
    assert not fixed and set(space) == {"schedule.scale", "schedule.warmup", "model.dropout", "loss.epsilon",
                                        "trainer.max_tokens"}  # fmt: skip
    default = composed("model=small", hydra=False)
    for key, distribution in space.items():
        value = OmegaConf.select(default, key)
        if hasattr(distribution, "choices"):
            assert value in distribution.choices, key
        else:
            assert distribution.low <= value <= distribution.high, key


def test_sqlite_url_is_absolute_and_its_directory_exists(tmp_path: Path) -> None:
    url = sqlite_url(str(tmp_path / "a" / "b" / "study.db"))
    assert url == f"sqlite:///{tmp_path}/a/b/study.db" and (tmp_path / "a" / "b").is_dir()


def test_the_study_seed_moves_on_with_the_trials_stored(tmp_path: Path) -> None:
    optuna = pytest.importorskip("optuna", reason=PLUGINS)
    storage = sqlite_url(str(tmp_path / "study.db"))
    assert study_seed(7, storage, "search") == 7
    study = optuna.create_study(study_name="search", storage=storage, direction="maximize")
    study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=3)
    optuna.create_study(study_name="another", storage=storage)
    assert study_seed(7, storage, "search") == 10

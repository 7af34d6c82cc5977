"""OmegaConf resolvers for sweeps: CPU threads shared by parallel jobs, the Optuna study's storage and seed.

seq2seq-train registers them; the configs use them as
  ${seq2seq.threads_per_job:}    trainer.num_threads: null (PyTorch's default) unless jobs run side by side
                                 on this machine (hydra/launcher=joblib): then cores // jobs at once, >= 1
  ${seq2seq.launcher_jobs:}      how many jobs the chosen launcher runs at once (the Optuna batch size)
  ${seq2seq.sqlite:PATH}         an SQLite URL for an Optuna study, its directory created
  ${seq2seq.study_seed:SEED,STORAGE,STUDY}   SEED plus the trials the stored study already holds
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf


def available_cores() -> int:
    """CPUs this process may run on: its affinity mask (a SLURM or taskset allocation), not the host's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def launcher_jobs(launcher: Mapping[str, Any], cores: int) -> int:
    """Jobs a Hydra launcher runs at once: joblib's n_jobs (-1 = one per core, -2 = all cores but one,
    as joblib counts), submitit's array_parallelism, else 1 (the basic launcher runs them in turn)."""
    n_jobs = launcher.get("n_jobs")
    if n_jobs is not None:
        n_jobs = int(n_jobs)
        return max(1, cores + 1 + n_jobs if n_jobs < 0 else n_jobs)
    return max(1, int(launcher.get("array_parallelism") or 1))


def threads_per_job(cores: int, jobs: int) -> int:
    """An equal share of `cores` for each of `jobs` processes running at once, at least one thread."""
    return max(1, cores // max(1, jobs))


def local_parallel_jobs(hydra_cfg: Mapping[str, Any], cores: int) -> int:
    """Jobs of this multirun that share this machine at once: the launcher's processes (joblib's n_jobs;
    submitit jobs each get an allocation of their own), capped by the sweeper's batch size."""
    launcher, sweeper = hydra_cfg["launcher"], hydra_cfg["sweeper"]
    if launcher.get("n_jobs") is None:
        return 1
    jobs = launcher_jobs(launcher, cores)
    batch = sweeper.get("n_jobs") or sweeper.get("max_batch_size")  # Optuna's or the basic sweeper's
    return min(jobs, int(batch)) if batch else jobs


def _threads_per_job() -> int | None:
    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None
    cores = available_cores()
    jobs = local_parallel_jobs(HydraConfig.get(), cores)
    return threads_per_job(cores, jobs) if jobs > 1 else None


def _launcher_jobs(*, _root_: DictConfig) -> int:
    return launcher_jobs(_root_.hydra.launcher, available_cores())


def sqlite_url(path: str) -> str:
    """`sqlite:///ABSOLUTE_PATH`, with the file's directory created: SQLite creates files, not directories,
    and Optuna opens the study before Hydra creates the sweep directory."""
    file = Path(path).expanduser().resolve()
    file.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{file}"


def study_seed(seed: int, storage: str, study_name: str) -> int:
    """The sampler seed for the next run of a stored study: `seed` plus the trials it holds already, so a
    continued search is as reproducible as a fresh one and does not repeat the first run's random draws."""
    import optuna  # the [sweep] extra; only sweeps that store a study get here

    summaries = optuna.get_all_study_summaries(storage)
    return int(seed) + next((s.n_trials for s in summaries if s.study_name == study_name), 0)


def register_resolvers() -> None:
    """Make the resolvers above available to configs (safe to call more than once)."""
    for name, resolver in (
        ("seq2seq.threads_per_job", _threads_per_job),
        ("seq2seq.launcher_jobs", _launcher_jobs),
        ("seq2seq.sqlite", sqlite_url),
        ("seq2seq.study_seed", study_seed),
    ):
        OmegaConf.register_new_resolver(name, resolver, replace=True)

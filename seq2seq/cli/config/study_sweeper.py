"""The Optuna sweeper of configs/hydra/sweeper/study.yaml: Hydra's own, plus two things a study that runs
for days needs. A new study's first trial is the recipe as composed (the defaults, the experiment and
the command line), so every study holds its baseline. A trial that a stopped invocation left running
(Ctrl-C, a machine switched off, a session that ended) is queued again with the same settings, so the
next invocation trains it from the start rather than losing that point of the search.

Hydra builds it through hydra_plugins/seq2seq_sweeper (Hydra takes sweepers from that package only), for
`hydra/sweeper=study`; it needs the `sweep` extra (hydra-optuna-sweeper, optuna<3).
"""

from __future__ import annotations

import logging
import os
import socket
import warnings
from collections.abc import Mapping
from typing import Any

import optuna
import yaml
from hydra_plugins.hydra_optuna_sweeper._impl import OptunaSweeperImpl, create_params_from_overrides
from omegaconf import DictConfig, OmegaConf
from optuna.distributions import BaseDistribution, CategoricalDistribution

log = logging.getLogger(__name__)

PROCESS_ATTR = "seq2seq:sweeper_process"  # "host:pid" of the invocation that asked the trial


def this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def process_is_gone(process: str) -> bool:
    """True when `process` ("host:pid") ran on this machine and no longer exists. A trial asked on
    another machine is never judged from here."""
    host, _, pid = process.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def requeue_interrupted(study: optuna.Study, *, everything_running: bool = False) -> list[int]:
    """Fail each trial left RUNNING by a process of this machine that is gone (with `everything_running`:
    each RUNNING trial, for a caller who knows that none runs), and queue its settings again. Returns the
    numbers of the trials queued again."""
    requeued = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        process = trial.system_attrs.get(PROCESS_ATTR)
        if not everything_running and (process is None or not process_is_gone(process)):
            log.info(
                "trial %d is running (asked by %s); left alone", trial.number, process or "an unknown process"
            )
            continue
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # enqueue_trial is marked experimental in optuna 2
            study.enqueue_trial(dict(trial.params))
        requeued.append(trial.number)
        log.info(
            "trial %d was interrupted (%s is gone): marked FAIL, its settings queued again",
            trial.number,
            process or "its process",
        )
    return requeued


def same_kind(a: Any, b: Any) -> bool:
    """Both numbers (a float setting equals the int choice 5), or both of one type (True is not 1)."""
    numbers = (int, float)
    both_numbers = all(isinstance(x, numbers) and not isinstance(x, bool) for x in (a, b))
    return both_numbers or type(a) is type(b)


def matching_value(value: Any, distribution: BaseDistribution) -> tuple[bool, Any]:
    """Whether the distribution holds a config value, and the value in the study's form. A categorical
    choice written as text (`"[0.9,0.98]"` for a list setting) matches the value it parses to."""
    if isinstance(distribution, CategoricalDistribution):
        for choice in distribution.choices:
            parsed = yaml.safe_load(choice) if isinstance(choice, str) else choice
            if parsed == value and same_kind(parsed, value):
                return True, choice
        return False, value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, value
    integers = (optuna.distributions.IntUniformDistribution, optuna.distributions.IntLogUniformDistribution)
    if not isinstance(distribution, integers):
        value = float(value)
    elif value != int(value):
        return False, value
    return distribution._contains(distribution.to_internal_repr(value)), value


def baseline_params(config: DictConfig, space: Mapping[str, BaseDistribution]) -> tuple[dict, list[str]]:
    """The composed config's value of every searched key, and the keys whose value lies outside the
    space (then there is no baseline to queue)."""
    params, outside = {}, []
    for key, distribution in space.items():
        value = OmegaConf.select(config, key, default=None)
        if isinstance(value, DictConfig) or OmegaConf.is_list(value):
            value = OmegaConf.to_container(value, resolve=True)
        inside, study_value = matching_value(value, distribution)
        if inside:
            params[key] = study_value
        else:
            outside.append(f"{key}={value}")
    return params, outside


class StudySweeperImpl(OptunaSweeperImpl):
    """Prepares the stored study (baseline, interrupted trials), then sweeps as the plugin does, marking
    each trial it asks with the process that asked it."""

    def sweep(self, arguments: list[str]) -> None:
        self._process_searchspace_config()
        space, fixed = create_params_from_overrides([*self._parse_sweeper_params_config(), *arguments])
        for key in fixed:
            space.pop(key, None)
        if self.storage is not None and self.study_name is not None:
            self.prepare_study(space)
        super().sweep(arguments)

    def prepare_study(self, space: Mapping[str, BaseDistribution]) -> None:
        study = optuna.create_study(
            study_name=self.study_name,
            storage=self.storage,
            directions=self._get_directions(),
            load_if_exists=True,
        )
        requeue_interrupted(study)
        if study.get_trials(deepcopy=False) or not space:
            return
        params, outside = baseline_params(self.config, space)
        if outside:
            log.info(
                "no baseline trial: the composed recipe lies outside the searched space (%s)",
                ", ".join(outside),
            )
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # enqueue_trial is marked experimental in optuna 2
            study.enqueue_trial(params)
        shown = " ".join(f"{key}={value}" for key, value in params.items())
        log.info("new study '%s': trial 0 is the recipe as composed: %s", self.study_name, shown)

    def _configure_trials(self, trials: list, search_space_distributions: dict, fixed_params: dict) -> Any:
        for trial in trials:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # set_system_attr is deprecated only from optuna 3
                trial.set_system_attr(PROCESS_ATTR, this_process())
        return super()._configure_trials(trials, search_space_distributions, fixed_params)

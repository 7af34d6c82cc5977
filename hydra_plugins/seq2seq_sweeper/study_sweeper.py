"""The Sweeper Hydra instantiates for `hydra/sweeper=study`. Hydra imports every module of the
hydra_plugins package when it starts, so this one stays light: Optuna and the plugin it extends are
imported only when a study sweep is built."""

from __future__ import annotations

from typing import Any

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class StudySweeper(Sweeper):
    """hydra-optuna-sweeper's sweeper with seq2seq's additions (seq2seq.cli.config.study_sweeper); same settings."""

    def __init__(self, **settings: Any) -> None:
        from seq2seq.cli.config.study_sweeper import StudySweeperImpl  # the [sweep] extra: optuna, the Optuna plugin

        self.sweeper = StudySweeperImpl(**settings)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.sweeper.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        return self.sweeper.sweep(arguments)

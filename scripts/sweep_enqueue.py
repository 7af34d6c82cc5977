#!/usr/bin/env python
"""Queue a hand-picked trial in an Optuna study written by a configs/sweep/ recipe.

    python scripts/sweep_enqueue.py multirun/bible.en-es/recipe_tune_avg5 \\
        schedule.scale=1.3 schedule.warmup=600 model.dropout=0.1 loss.epsilon=0.1 trainer.max_tokens=4096
    seq2seq-train -m +sweep=recipe_tune hydra.sweeper.n_trials=1 trainer.max_minutes=30   # runs it

The next invocation of the same recipe asks the study for a trial and gets the queued one first
(Optuna's enqueue_trial), so a guess from experience or from a paper is trained, scored and stored
like any other trial and the sampler learns from it. Every searched setting must be given, with a
value inside the range the study searches; anything else is refused before it is queued.

    python scripts/sweep_enqueue.py multirun/bible.en-es/recipe_avx2 --requeue-running

queues again every trial the study holds as RUNNING, for a study whose machine is gone (the sweeper
queues those of its own machine by itself); only when no invocation of the study runs anywhere.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from sweep_report import ReportError, find_storage, open_study  # this script's directory


class EnqueueError(ReportError):
    """A problem with the study or the settings, printed as one line."""


def parse_value(text: str) -> Any:
    """`600` -> 600, `0.1` -> 0.1, anything else stays a string (a categorical choice)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_settings(items: list[str]) -> dict[str, Any]:
    settings = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key or not value:
            raise EnqueueError(f"'{item}' is not KEY=VALUE (for example schedule.warmup=600)")
        settings[key] = parse_value(value)
    return settings


def storage_url(study_dir: Path) -> str:
    storage = find_storage(study_dir.parent if study_dir.name == "study.db" else study_dir)
    if storage is None:
        raise EnqueueError(
            f"no study at {study_dir / 'study.db'}: run the recipe once first (seq2seq-train -m +sweep=...), "
            "then queue trials in the directory that holds its study.db"
        )
    return storage


def searched_space(study: Any) -> dict[str, Any]:
    """Each searched setting and its distribution, as the study's latest trials used them."""
    space: dict[str, Any] = {}
    for trial in study.trials:
        space.update(trial.distributions)
    if not space:
        raise EnqueueError(f"study '{study.study_name}' has no trials yet, so its search space is unknown")
    return space


def check_settings(settings: dict[str, Any], space: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(settings) - set(space))
    missing = sorted(set(space) - set(settings))
    if unknown or missing:
        raise EnqueueError(
            f"the study searches {sorted(space)}; "
            + "; ".join(
                part
                for part in (
                    f"not searched: {unknown}" if unknown else "",
                    f"missing: {missing}" if missing else "",
                )
                if part
            )
        )
    checked = {}
    for key, value in settings.items():
        distribution = space[key]
        if isinstance(value, int) and type(distribution).__name__.startswith(("Uniform", "LogUniform")):
            value = float(value)  # 1 for a float range
        try:
            inside = distribution._contains(distribution.to_internal_repr(value))
        except (TypeError, ValueError):
            inside = False
        if not inside:
            raise EnqueueError(f"{key}={value} is outside the searched range {distribution}")
        checked[key] = value
    return checked


def enqueue(study_dir: Path, items: list[str], study_name: str | None) -> tuple[str, dict[str, Any]]:
    study = open_study(storage_url(study_dir), study_name)
    settings = check_settings(parse_settings(items), searched_space(study))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enqueue_trial is marked experimental in optuna 2
        study.enqueue_trial(settings)
    return study.study_name, settings


def requeue_running(study_dir: Path, study_name: str | None) -> tuple[str, list[int]]:
    from seq2seq.cli.config.study_sweeper import requeue_interrupted  # the sweep extra, as this script

    study = open_study(storage_url(study_dir), study_name)
    return study.study_name, requeue_interrupted(study, everything_running=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("study_dir", type=Path, help="the directory holding study.db (or the file itself)")
    parser.add_argument("settings", nargs="*", help="KEY=VALUE for every searched setting")
    parser.add_argument("--study", default=None, help="study name, when the storage holds several")
    parser.add_argument(
        "--requeue-running",
        action="store_true",
        help="queue again every RUNNING trial (when no invocation of the study runs)",
    )
    args = parser.parse_args(argv)
    if args.requeue_running == bool(args.settings):
        parser.error("give either KEY=VALUE settings or --requeue-running")
    try:
        if args.requeue_running:
            study_name, numbers = requeue_running(args.study_dir, args.study)
            print(f"study '{study_name}': queued again the settings of trials {numbers}" if numbers
                  else f"study '{study_name}' has no RUNNING trial")  # fmt: skip
            return 0
        study_name, settings = enqueue(args.study_dir, args.settings, args.study)
    except ReportError as error:  # EnqueueError, or a problem opening the study
        print(f"error: {error}", file=sys.stderr)
        return 2
    shown = " ".join(f"{key}={value}" for key, value in sorted(settings.items()))
    print(f"queued in study '{study_name}': {shown}")
    print("the next seq2seq-train -m with the same recipe runs it first")
    return 0


if __name__ == "__main__":
    sys.exit(main())

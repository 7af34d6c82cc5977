#!/usr/bin/env python
"""Turn a `seq2seq-train -m` sweep into a table (Markdown + CSV) and pictures.

    python scripts/sweep_report.py multirun/bible.en-es/2026-11-22_10-00-00     # a grid sweep
    python scripts/sweep_report.py multirun/bible.en-es/recipe_search           # an Optuna search

Each job directory holds `summary.json` (written at the end of training) and `.hydra/overrides.yaml`.

Grid sweeps: one row per job; columns: the overrides that differ between jobs, best dev BLEU, training
tokens/s, threads, parameters, minutes, updates; report.png is a bar chart of dev BLEU.

Optuna sweeps (`+sweep=recipe_search`, or any sweep that wrote `optimization_results.yaml`): one row per
trial of the study, read from `study.db` in the directory or its parent (or --storage) and joined to its
job's summary.json, best objective first; the best trial as a ready-to-paste seq2seq-train command
(floats rounded to 4 significant digits); objective.png (each trial and the best so far) and
parallel_coordinates.png (one axis per searched setting, one line per trial, coloured by the objective).
Without a stored study the trials are the jobs found and the searched settings those of
optimization_results.yaml.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ReportError(Exception):
    """A problem with the sweep directory or options, printed as one line."""


def natural_key(path: Path) -> list[Any]:
    """Sort job directories 0, 1, ..., 10 (not 0, 1, 10, 2)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def read_jobs(sweep_dir: Path) -> list[dict]:
    jobs = []
    for summary_path in sorted(sweep_dir.glob("**/summary.json"), key=natural_key):
        summary = json.loads(summary_path.read_text())
        overrides = dict(item.split("=", 1) for item in summary.get("overrides", []) if "=" in item)
        jobs.append(
            {**summary, "dir": str(summary_path.parent.relative_to(sweep_dir)), "overrides": overrides}
        )
    return jobs


MEASURED = ["tokens/s", "threads", "parameters", "minutes", "updates"]


def measured(job: dict | None) -> list[str]:
    """The columns every report shows from a job's summary.json (blank without one)."""
    if job is None:
        return [""] * len(MEASURED)
    threads = job.get("threads")
    return [
        f"{job.get('tokens_per_second', 0):,.0f}",
        "" if threads is None else str(threads),
        f"{job.get('parameters', 0):,}",
        f"{job.get('minutes', 0):.1f}",
        str(job.get("updates", "")),
    ]


def directions_of(jobs: list[dict]) -> list[str]:
    """The dev directions of multilingual jobs (summary.json's dev_directions), in order of appearance."""
    names: list[str] = []
    for job in jobs:
        names += [name for name in (job.get("dev_directions") or {}) if name not in names]
    return names


def direction_cells(job: dict | None, names: list[str]) -> list[str]:
    """A multilingual job's dev BLEU per direction (the objective is their mean); blank where absent."""
    scores = (job or {}).get("dev_directions") or {}
    return [f"{scores[name]['bleu']:.2f}" if "bleu" in scores.get(name, {}) else "" for name in names]


# ----------------------------------------------------------------------------- grid sweeps


def differing_keys(jobs: list[dict]) -> list[str]:
    keys = sorted({key for job in jobs for key in job["overrides"]})
    return [k for k in keys if len({job["overrides"].get(k) for job in jobs}) > 1] or keys


def table_rows(jobs: list[dict]) -> tuple[list[str], list[list[str]]]:
    keys, directions = differing_keys(jobs), directions_of(jobs)
    objective = "best dev BLEU (mean of directions)" if directions else "best dev BLEU"
    header = keys + [objective, *(f"dev BLEU {name}" for name in directions), *MEASURED]
    rows = []
    for job in sorted(jobs, key=lambda j: -(j.get("best_dev_bleu") or -1)):
        bleu = job.get("best_dev_bleu")
        rows.append(
            [job["overrides"].get(k, "") for k in keys] + ["n/a" if bleu is None else f"{bleu:.2f}"]
            + direction_cells(job, directions) + measured(job)
        )  # fmt: skip
    return header, rows


def bar_chart(path: Path, labels: list[str], values: list[float]) -> None:
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(max(4, 1.2 * len(labels) + 2), 3.5))
    axes.bar(range(len(values)), values, color="tab:blue")
    axes.set_xticks(range(len(labels)), labels=labels, rotation=20, ha="right", fontsize=8)
    axes.set_ylabel("best dev BLEU")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def grid_report(jobs: list[dict], out: Path) -> tuple[str, list[Path]]:
    header, rows = table_rows(jobs)
    write_csv(out / "report.csv", header, rows)
    keys = differing_keys(jobs)
    labels = [",".join(f"{k.split('.')[-1]}={r[i]}" for i, k in enumerate(keys)) for r in rows]
    values = [float(r[len(keys)]) if r[len(keys)] != "n/a" else 0.0 for r in rows]
    bar_chart(out / "report.png", labels, values)
    return markdown(header, rows), [out / "report.csv", out / "report.png"]


# ----------------------------------------------------------------------------- Optuna sweeps


@dataclass
class Trial:
    number: int
    state: str  # COMPLETE, FAIL, RUNNING (an interrupted sweep), ...
    value: float | None
    params: dict[str, Any]  # the searched settings
    fixed: dict[str, str]  # the other overrides of its job
    job: dict | None = None


@dataclass
class Search:
    trials: list[Trial]
    maximize: bool = True
    keys: list[str] = field(default_factory=list)  # searched settings, in table order


def find_storage(sweep_dir: Path) -> str | None:
    """The study written by configs/sweep/*: study.db in the sweep directory or, for one invocation's
    timestamped directory, beside it."""
    for directory in (sweep_dir, sweep_dir.parent):
        if (directory / "study.db").is_file():
            return f"sqlite:///{(directory / 'study.db').resolve()}"
    return None


def open_study(storage: str, study_name: str | None) -> Any:
    """The optuna.Study in `storage`: the one named, or the only one there."""
    try:
        import optuna
    except ImportError:
        raise ReportError(
            "reading an Optuna study needs the sweep extra: pip install -e '.[sweep]'"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = [summary.study_name for summary in optuna.get_all_study_summaries(storage)]
    if study_name is None and len(names) == 1:
        study_name = names[0]
    if study_name not in names:
        raise ReportError(f"{storage} holds the studies {names}; choose one with --study NAME")
    return optuna.load_study(study_name=study_name, storage=storage)


def load_study(storage: str, study_name: str | None) -> Search:
    study = open_study(storage, study_name)
    trials = [
        Trial(t.number, t.state.name, t.value, dict(t.params), {k: str(v) for k, v in t.user_attrs.items()})
        for t in study.trials
    ]
    return Search(trials, maximize=study.direction.name == "MAXIMIZE")


def attach_jobs(search: Search, jobs: list[dict]) -> None:
    """Each trial's job: the one whose overrides include the trial's settings as the sweeper wrote them."""
    unused = list(jobs)
    for trial in sorted(search.trials, key=lambda t: t.number):
        wanted = {f"{key}={value}" for key, value in trial.params.items()}
        for job in unused:
            if wanted <= {f"{key}={value}" for key, value in job["overrides"].items()}:
                trial.job = job
                unused.remove(job)
                break


def trials_from_jobs(sweep_dir: Path, jobs: list[dict]) -> Search:
    """No stored study: the jobs are the trials; the searched keys those optimization_results.yaml names."""
    import yaml  # a dependency of Hydra (OmegaConf)

    keys = set()
    for path in sweep_dir.glob("**/optimization_results.yaml"):
        keys |= set((yaml.safe_load(path.read_text()) or {}).get("best_params", {}))
    trials = []
    for number, job in enumerate(jobs):
        value = job.get("best_dev_bleu")
        params = {k: v for k, v in job["overrides"].items() if k in keys}
        fixed = {k: v for k, v in job["overrides"].items() if k not in keys}
        trials.append(Trial(number, "COMPLETE" if value is not None else "FAIL", value, params, fixed, job))
    return Search(trials)


def short(value: Any) -> str:
    """A setting as the table and the command show it: floats to 4 significant digits."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        value = int(number) if number.is_integer() and "." not in value and "e" not in value else number
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def ranked(search: Search) -> list[Trial]:
    """Finished trials best first, then the others by number."""
    sign = -1 if search.maximize else 1
    done = sorted((t for t in search.trials if t.value is not None), key=lambda t: sign * t.value)
    return done + sorted((t for t in search.trials if t.value is None), key=lambda t: t.number)


def search_table(search: Search) -> tuple[list[str], list[list[str]]]:
    directions = directions_of([trial.job for trial in search.trials if trial.job])
    objective = "objective (mean dev BLEU of directions)" if directions else "objective (dev BLEU)"
    header = ["trial", objective, *(f"dev BLEU {name}" for name in directions), *search.keys, *MEASURED,
              "state", "dir"]  # fmt: skip
    rows = []
    for trial in ranked(search):
        value = "n/a" if trial.value is None else f"{trial.value:.2f}"
        settings = [short(trial.params[k]) if k in trial.params else "" for k in search.keys]
        directory = trial.job["dir"] if trial.job else ""
        rows.append([str(trial.number), value, *direction_cells(trial.job, directions), *settings,
                     *measured(trial.job), trial.state, directory])  # fmt: skip
    return header, rows


def best_command(trial: Trial) -> str:
    """seq2seq-train with the best trial's settings, without the sweep config and Hydra's own settings."""
    fixed = [
        f"{key}={value}"
        for key, value in trial.fixed.items()
        if key not in trial.params and not key.lstrip("+~").startswith(("sweep", "hydra"))
    ]
    searched = [f"{key}={short(value)}" for key, value in trial.params.items()]
    return "seq2seq-train " + " ".join(shlex.quote(override) for override in fixed + searched)


def objective_plot(path: Path, search: Search) -> None:
    """Each finished trial's objective, and the best so far."""
    plt = pyplot()
    done = sorted((t for t in search.trials if t.value is not None), key=lambda t: t.number)
    numbers, values = [t.number for t in done], [t.value for t in done]
    best = list(itertools.accumulate(values, max if search.maximize else min))
    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.plot(numbers, values, "o", color="tab:blue", label="trial")
    axes.step(numbers, best, where="post", color="tab:orange", label="best so far")
    axes.set_xlabel("trial")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_ylabel("objective (dev BLEU)")
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def axis_positions(values: list[Any]) -> tuple[list[float], list[str]]:
    """Values placed on a 0..1 axis (numbers linearly, anything else by sorted rank) and the end labels."""
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        levels = sorted({str(v) for v in values})
        if len(levels) == 1:
            return [0.5] * len(values), ["", levels[0]]
        return [levels.index(str(v)) / (len(levels) - 1) for v in values], [levels[0], levels[-1]]
    low, high = min(numbers), max(numbers)
    if low == high:
        return [0.5] * len(numbers), ["", short(low)]
    return [(n - low) / (high - low) for n in numbers], [short(low), short(high)]


def parallel_coordinates_plot(path: Path, search: Search) -> None:
    """One vertical axis per searched setting plus the objective; one line per finished trial."""
    plt = pyplot()
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    done = ranked(search)
    done = [t for t in done if t.value is not None][::-1]  # the best drawn last, on top
    keys = [k for k in search.keys if all(k in t.params for t in done)]
    columns = [[t.params[k] for t in done] for k in keys] + [[t.value for t in done]]
    placed = [axis_positions(column) for column in columns]
    norm = Normalize(min(t.value for t in done), max(t.value for t in done))
    figure, axes = plt.subplots(figsize=(max(6, 1.3 * len(columns) + 2), 4))
    for row, trial in enumerate(done):
        heights = [positions[row] for positions, _ in placed]
        best = row == len(done) - 1
        axes.plot(
            range(len(columns)), heights, color=plt.cm.viridis(norm(trial.value)), lw=2.5 if best else 1
        )
    for x, (_, (low, high)) in enumerate(placed):
        axes.axvline(x, color="grey", lw=0.8)
        axes.text(x, -0.04, low, ha="center", va="top", fontsize=7)
        axes.text(x, 1.04, high, ha="center", va="bottom", fontsize=7)
    axes.set_xticks(range(len(columns)), labels=[*keys, "objective"], rotation=25, ha="right", fontsize=8)
    axes.set_yticks([])
    axes.set_ylim(-0.15, 1.15)
    figure.colorbar(ScalarMappable(norm, plt.cm.viridis), ax=axes, label="objective (dev BLEU)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def search_report(search: Search, out: Path) -> tuple[str, list[Path]]:
    finished = [t for t in search.trials if t.value is not None]
    if not finished:
        raise ReportError("no trial of this study has finished yet; run the sweep (again) first")
    search.keys = sorted({key for trial in search.trials for key in trial.params})
    header, rows = search_table(search)
    write_csv(out / "report.csv", header, rows)
    best = ranked(search)[0]
    text = (
        f"{markdown(header, rows)}\n\n{len(finished)} of {len(search.trials)} trials finished; "
        f"best: trial {best.number}, objective {best.value:.2f}\n\n```bash\n{best_command(best)}\n```"
    )
    objective_plot(out / "objective.png", search)
    parallel_coordinates_plot(out / "parallel_coordinates.png", search)
    return text, [out / "report.csv", out / "objective.png", out / "parallel_coordinates.png"]


# ----------------------------------------------------------------------------- output


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows([header] + rows)


def report(sweep_dir: Path, out: Path, storage: str | None, study: str | None) -> tuple[str, list[Path]]:
    if not sweep_dir.is_dir():
        raise ReportError(f"{sweep_dir} is not a directory; pass a multirun directory")
    jobs = read_jobs(sweep_dir)
    storage = storage or find_storage(sweep_dir)
    if storage is None and not any(sweep_dir.glob("**/optimization_results.yaml")):
        if not jobs:
            raise ReportError(f"no finished jobs (summary.json) under {sweep_dir}; did the sweep complete?")
        return grid_report(jobs, out)
    search = load_study(storage, study) if storage else trials_from_jobs(sweep_dir, jobs)
    attach_jobs(search, jobs)
    return search_report(search, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sweep_dir", type=Path, help="a multirun directory written by seq2seq-train -m")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write report.md, .csv and .png (default: sweep_dir)"
    )
    parser.add_argument("--storage", default=None, help="Optuna storage URL (default: study.db found)")
    parser.add_argument("--study", default=None, help="study name, when the storage holds several")
    args = parser.parse_args(argv)
    out = args.out or args.sweep_dir
    try:
        if args.sweep_dir.is_dir():
            out.mkdir(parents=True, exist_ok=True)
        text, written = report(args.sweep_dir, out, args.storage, args.study)
    except ReportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    (out / "report.md").write_text(text + "\n")
    print(text)
    print("\nwrote " + ", ".join(str(path) for path in [out / "report.md", *written]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Turn a `seq2seq-train -m` multirun directory into a table (Markdown + CSV) and a bar chart.

    python scripts/sweep_report.py multirun/bible_en_es.en-es/2026-11-22_10-00-00

Each job directory holds `summary.json` (written at the end of training) and `.hydra/overrides.yaml`.
Columns: the overrides that differ between jobs, best dev BLEU, training tokens/s, parameters, minutes.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path


def read_jobs(sweep_dir: Path) -> list[dict]:
    jobs = []
    for summary_path in sorted(sweep_dir.glob("**/summary.json")):
        summary = json.loads(summary_path.read_text())
        overrides = dict(item.split("=", 1) for item in summary.get("overrides", []) if "=" in item)
        jobs.append(
            {**summary, "dir": str(summary_path.parent.relative_to(sweep_dir)), "overrides": overrides}
        )
    return jobs


def differing_keys(jobs: list[dict]) -> list[str]:
    keys = sorted({key for job in jobs for key in job["overrides"]})
    return [k for k in keys if len({job["overrides"].get(k) for job in jobs}) > 1] or keys


def table_rows(jobs: list[dict]) -> tuple[list[str], list[list[str]]]:
    keys = differing_keys(jobs)
    header = keys + ["best dev BLEU", "tokens/s", "parameters", "minutes", "updates"]
    rows = []
    for job in sorted(jobs, key=lambda j: -(j.get("best_dev_bleu") or -1)):
        bleu = job.get("best_dev_bleu")
        rows.append(
            [job["overrides"].get(k, "") for k in keys]
            + [
                "n/a" if bleu is None else f"{bleu:.2f}",
                f"{job.get('tokens_per_second', 0):,.0f}",
                f"{job.get('parameters', 0):,}",
                f"{job.get('minutes', 0):.1f}",
                str(job.get("updates", "")),
            ]
        )
    return header, rows


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def bar_chart(path: Path, labels: list[str], values: list[float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(max(4, 1.2 * len(labels) + 2), 3.5))
    axes.bar(range(len(values)), values, color="tab:blue")
    axes.set_xticks(range(len(labels)), labels=labels, rotation=20, ha="right", fontsize=8)
    axes.set_ylabel("best dev BLEU")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sweep_dir", type=Path, help="a multirun directory written by seq2seq-train -m")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write report.md/csv/png (default: sweep_dir)"
    )
    args = parser.parse_args(argv)
    if not args.sweep_dir.is_dir():
        print(f"error: {args.sweep_dir} is not a directory; pass a multirun directory", file=sys.stderr)
        return 2
    jobs = read_jobs(args.sweep_dir)
    if not jobs:
        print(
            f"error: no finished jobs (summary.json) under {args.sweep_dir}; did the sweep complete?",
            file=sys.stderr,
        )
        return 2
    out = args.out or args.sweep_dir
    out.mkdir(parents=True, exist_ok=True)
    header, rows = table_rows(jobs)
    report = markdown(header, rows)
    (out / "report.md").write_text(report + "\n")
    with open(out / "report.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([header] + rows)
    keys = differing_keys(jobs)
    labels = [",".join(f"{k.split('.')[-1]}={r[i]}" for i, k in enumerate(keys)) for r in rows]
    bar_chart(
        out / "report.png", labels, [float(r[len(keys)]) if r[len(keys)] != "n/a" else 0.0 for r in rows]
    )
    print(report)
    print(f"\nwrote {out / 'report.md'}, {out / 'report.csv'}, {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""A distilled student against its teacher, side by side in one run: sentences/s and peak RSS in our
engine (fp32; int8 + shortlist) and in CTranslate2 (int8 + vocabulary map), on 1 and 2 threads.

    python benchmarks/distillation.py --teacher runs/distill-teacher-1/averaged.pt \\
        runs/distill-teacher-2/averaged.pt --student runs/distill-student-distilled/averaged.pt \\
        --finished runs/distill/finished
    python benchmarks/distillation.py ... --limit 100 --rounds 1        # a quick look

`--finished` is the directory scripts/distillation_study.py fills with scripts/finish_for_cpu.sh's
artefacts: <finished>/teacher-1/ and <finished>/<student>/, each with shortlist.pt and ctranslate2-int8/.
Several --teacher checkpoints are an ensemble in our engine; CTranslate2 runs no ensembles, so its
teacher row is the first member alone (half the ensemble's work, a stricter comparison for the student).
Each configuration translates the first --limit test sentences with beam --beam in a fresh process
(benchmarks/engines.py's worker; model loading excluded), all configurations one after another in each
round (interleaved, so load drifts hit them alike); reported: the best round's sentences/s, the spread
over rounds, the peak RSS, and the ratios the study's goals name.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import describe_machine, format_table, print_headline, set_threads
from engines import run_worker

ROOT = Path(__file__).resolve().parents[1]


def configurations(args: argparse.Namespace) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(model, engine) -> (model path(s), our quantization, our shortlist file)."""
    teacher_dir, student_dir = args.finished / "teacher-1", args.finished / args.student_name
    ensemble = ",".join(str(path) for path in args.teacher)
    rows = {
        ("teacher", "ours fp32"): (ensemble, "none", ""),
        ("teacher", "ours int8 + shortlist"): (ensemble, "int8", str(teacher_dir / "shortlist.pt")),
        ("student", "ours fp32"): (str(args.student), "none", ""),
        ("student", "ours int8 + shortlist"): (str(args.student), "int8", str(student_dir / "shortlist.pt")),
        ("student", "CTranslate2 int8 + vmap"): (str(student_dir / "ctranslate2-int8"), "none", ""),
        ("teacher 1", "CTranslate2 int8 + vmap"): (str(teacher_dir / "ctranslate2-int8"), "none", ""),
    }
    if len(args.teacher) > 1:
        rows[("teacher 1", "ours fp32")] = (str(args.teacher[0]), "none", "")
    return rows


def measure(args: argparse.Namespace, source: Path) -> dict[tuple[str, str, int], list[dict]]:
    rows = configurations(args)
    runs: dict[tuple[str, str, int], list[dict]] = {(m, e, t): [] for t in args.threads for m, e in rows}
    for round_ in range(args.rounds):
        for model, engine, threads in runs:
            path, quantization, shortlist = rows[model, engine]
            worker_args = argparse.Namespace(threads=threads, max_tokens=args.max_tokens)
            result = run_worker(path, worker_args, source, args.beam, quantization, shortlist, False)
            runs[model, engine, threads].append(result)
            print(
                f"round {round_ + 1}: {model}, {engine}, {threads} thread(s): {result['seconds']:.1f} s",
                flush=True,
            )
    return runs


def report(args: argparse.Namespace, runs: dict, lines: int) -> None:
    speed, rows = {}, []
    for (model, engine, threads), measured in runs.items():
        best = min(run["seconds"] for run in measured)
        spread = max(run["seconds"] for run in measured) / best - 1
        speed[model, engine, threads] = lines / best
        peak = max(run["peak_rss"] for run in measured) / 2**20
        rows.append([model, engine, threads, f"{lines / best:.1f}", f"{spread:.0%}", f"{peak:,.0f}"])
    print(f"\n{lines} test sentences, beam {args.beam}, best of {args.rounds} rounds\n")
    print(format_table(["model", "engine", "threads", "sentences/s", "spread", "peak RSS MiB"], rows))
    for threads in args.threads:
        for engine in ("ours fp32", "ours int8 + shortlist"):
            ratio = speed["student", engine, threads] / speed["teacher", engine, threads]
            print_headline(
                f"student {engine}, {threads} thread(s)", f"teacher {engine}", f"{ratio:.2f}x", ">= 3x"
            )
        ratio = (
            speed["student", "ours int8 + shortlist", threads]
            / speed["teacher 1", "CTranslate2 int8 + vmap", threads]
        )
        print_headline(
            f"student ours int8 + shortlist, {threads} thread(s)",
            "teacher 1 in CTranslate2 int8 + vmap",
            f"{ratio:.2f}x",
            ">= 1x",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", type=Path, nargs="+", required=True, help="its checkpoint(s)")
    parser.add_argument("--student", type=Path, required=True)
    parser.add_argument("--finished", type=Path, required=True, help="scripts/finish_for_cpu.sh outputs")
    parser.add_argument("--student-name", default=None, help="its folder in --finished (default: guessed)")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bible_en_es")
    parser.add_argument("--limit", type=int, default=500, help="test sentences translated")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=4096)
    args = parser.parse_args()
    if args.student_name is None:
        found = [p.name for p in args.finished.iterdir() if p.name.startswith("student")]
        guess = [name for name in found if args.student.parent.name.endswith(name.removeprefix("student-"))]
        if len(guess) != 1:
            sys.exit(f"pass --student-name: one of {found}")
        args.student_name = guess[0]
    print(describe_machine(set_threads(max(args.threads))))
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "test.en"
        lines = (args.data_dir / "test.en").read_text(encoding="utf-8").splitlines()[: args.limit]
        source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        report(args, measure(args, source), len(lines))


if __name__ == "__main__":
    main()

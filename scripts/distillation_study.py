#!/usr/bin/env python
"""Fast students: the study in docs/studies/distillation.md, every stage a command printed before it runs.

    python scripts/distillation_study.py                      # the study as documented
    python scripts/distillation_study.py --teacher-updates 20 --student-minutes 1 --name smoke   # a smoke run

1. teachers  --teachers runs of the quickstart's recipe (seq2seq-train's defaults, the `small` model),
             each --teacher-updates updates with its own seed, through scripts/quickstart.sh; the
             teacher is their ensemble (one run: that run)
2. distill   seq2seq-distill: the ensemble translates the training sources with beam 5 (its tuned
             length penalty), dropping the worst --drop-fraction of pairs by its score
3. students  experiment=student (model=student: 6 encoder and 2 decoder layers), --student-minutes
             each, one after another: on the original pairs (the baseline), on the distilled pairs
             alone, and on both
4. finish    scripts/finish_for_cpu.sh for each student and the first teacher: a shortlist and a
             CTranslate2 int8 export with it as the vocabulary map
5. scores    the test set with beam 5 (each model's tuned decoding) and greedy, sacreBLEU BLEU/chrF,
             and paired bootstrap resampling of the student rows against the baseline student

Every stage whose result exists is skipped, so running it again continues where it stopped. Speed and
memory are measured apart, on a quiet machine: benchmarks/distillation.py (the commands are printed at
the end). Results: runs/<name>/results.json and results.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
from pathlib import Path

from study_support import (
    BIBLE,
    ROOT,
    final_checkpoint,
    paired_bootstrap,
    run,
    sacrebleu_command,
    study_directory,
)


def teachers(args: argparse.Namespace) -> list[Path]:
    paths = []
    for index in range(args.teachers):
        name = f"{args.name}-teacher-{index + 1}"
        if not (ROOT / "runs" / name / "test_scores.json").is_file():
            env = {
                "MINUTES": "600",
                "EXPERIMENT": "",
                "RUN_NAME": name,
                "VENV": str(args.bin.parent),
                "EXTRA": f"trainer.max_updates={args.teacher_updates} seed={index + 1}",
            }
            print(f"# {' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())}", flush=True)
            run(["bash", "scripts/quickstart.sh"], ROOT / "runs" / f"{name}.log", env)
        paths.append(final_checkpoint(ROOT / "runs" / name))
    return paths


def distill(args: argparse.Namespace, work: Path, teacher: list[Path]) -> Path:
    out = work / "distilled"
    if not (out / "report.json").is_file():
        members = teacher[0] if len(teacher) == 1 else f"[{','.join(map(str, teacher))}]"
        run(
            [
                str(args.bin / "seq2seq-distill"),
                f"checkpoint={members}",
                f"input={BIBLE / 'train.en'}",
                f"output_dir={out}",
                f"filter.drop_fraction={args.drop_fraction}",
                "chunk_lines=2000",  # a stopped run loses at most a few minutes
                "progress_bar=false",
            ],
            work / "distill.log",
        )
    return out


def students(args: argparse.Namespace, work: Path, distilled: Path) -> dict[str, Path]:
    pairs = f"{{src: {distilled}/distill.en, tgt: {distilled}/distill.es}}"
    data = {
        "original": [],
        "distilled": [f"data.train={pairs}"],
        "distilled+original": [f"data.extra_train=[{pairs}]"],
    }
    paths = {}
    for label, settings in data.items():
        name = f"{args.name}-student-{label.replace('+', '-')}"
        if not (ROOT / "runs" / name / "summary.json").is_file():
            run(
                [
                    str(args.bin / "seq2seq-train"),
                    "experiment=student",
                    f"run_name={name}",
                    f"trainer.max_minutes={args.student_minutes}",
                    "trainer.progress_bar=false",
                    *settings,
                ],
                ROOT / "runs" / f"{name}.log",
            )
        paths[f"student ({label})"] = final_checkpoint(ROOT / "runs" / name)
    return paths


def finish(args: argparse.Namespace, work: Path, models: dict[str, Path], distilled: Path) -> None:
    """Each model's CPU artefacts; a student's shortlist is learned from the pairs it was trained on."""
    for label, checkpoint in models.items():
        out = work / "finished" / slug(label)
        if (out / "finish.json").is_file():
            continue
        trained_on = distilled / "distill" if "distilled" in label else BIBLE / "train"
        run(
            [
                "bash",
                "scripts/finish_for_cpu.sh",
                str(checkpoint),
                f"{trained_on}.en",
                f"{trained_on}.es",
                str(out),
                str(BIBLE / "test.en"),
            ],
            work / "finish.log",
            {"VENV": str(args.bin.parent)},
        )


def slug(label: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in label).strip("-").replace("--", "-")


def translate_test(args: argparse.Namespace, work: Path, models: dict[str, list[Path]]) -> dict[str, dict]:
    outputs: dict[str, dict] = {}
    for label, checkpoints in models.items():
        named = str(checkpoints[0]) if len(checkpoints) == 1 else f"[{','.join(map(str, checkpoints))}]"
        for search, settings in (
            ("beam 5", ["decode=beam", "decode.beam_size=5"]),
            ("greedy", ["decode=greedy"]),
        ):
            hyp = work / "test" / f"{slug(label)}.{slug(search)}.es"
            hyp.parent.mkdir(parents=True, exist_ok=True)
            if not hyp.is_file():
                run(
                    [
                        str(args.bin / "seq2seq-translate"),
                        f"checkpoint={named}",
                        f"input={BIBLE / 'test.en'}",
                        f"output={hyp}",
                        "progress_bar=false",
                        *settings,
                    ],
                    work / "translate.log",
                )
            outputs.setdefault(label, {})[search] = hyp
    return outputs


def scores(hyp: Path) -> dict[str, float]:
    command = sacrebleu_command(BIBLE / "test.es", [hyp], "-b")
    printed = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    bleu, chrf = re.findall(r"\d+(?:\.\d+)?", printed)  # "35.8 56.4", or a JSON list of them
    return {"bleu": float(bleu), "chrf": float(chrf)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="distill", help="runs/<name>/ and the run names' prefix")
    parser.add_argument("--teachers", type=int, default=2, help="teacher runs, ensembled")
    parser.add_argument("--teacher-updates", type=int, default=4000, help="updates per teacher run")
    parser.add_argument("--student-minutes", type=float, default=25.0, help="training time of each student")
    parser.add_argument("--drop-fraction", type=float, default=0.05, help="distilled pairs dropped by score")
    parser.add_argument(
        "--bin", type=Path, default=ROOT / ".venv" / "bin", help="where the seq2seq commands are"
    )
    args = parser.parse_args(argv)
    work = study_directory(args.name)
    teacher = teachers(args)
    distilled = distill(args, work, teacher)
    student = students(args, work, distilled)
    finish(args, work, {"teacher 1": teacher[0], **student}, distilled)
    models = {
        "teacher": teacher,
        **({f"teacher {i + 1}": [p] for i, p in enumerate(teacher)} if len(teacher) > 1 else {}),
        **{label: [path] for label, path in student.items()},
    }
    outputs = translate_test(args, work, models)
    results = {
        label: {search: scores(hyp) for search, hyp in searches.items()}
        for label, searches in outputs.items()
    }
    results["distillation"] = json.loads((distilled / "report.json").read_text())
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    table = paired_bootstrap(BIBLE / "test.es", {label: outputs[label]["beam 5"] for label in student})
    (work / "results.md").write_text(table, encoding="utf-8")
    print(table)
    print("speed and memory, on a quiet machine:")
    members = " ".join(str(p) for p in teacher)
    best = max(student, key=lambda label: results[label]["beam 5"]["bleu"])
    print(
        f"  python benchmarks/distillation.py --teacher {members} --student {student[best]} "
        f"--finished {work / 'finished'}"
    )


if __name__ == "__main__":
    main()

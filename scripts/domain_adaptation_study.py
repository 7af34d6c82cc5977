#!/usr/bin/env python
"""Domain adaptation through the Hugging Face format: the study in docs/studies/domain-adaptation.md.

    python scripts/domain_adaptation_study.py                       # 12 + 4 + 4 minutes of training
    python scripts/domain_adaptation_study.py --base-minutes 2 --adapt-minutes 1 --nt-train 500  # a smoke run

It stands in for "start from a model on the hub": a base model is trained on the Old Testament part of the
Bible corpus with Marian's architecture (model=marian), exported to a Hugging Face directory
(seq2seq-export target=huggingface) and imported back as a user imports a downloaded model (seq2seq-import).
Then, on a small New Testament training set (--nt-train verses of the corpus's training split):
  finetuned  the imported model fine-tuned (experiment=finetune init_from=...) for --adapt-minutes
  scratch    the same architecture trained from nothing on the same NT data for the same time
  base       the imported model as it is
all translated with beam 5 on the corpus's New Testament test verses and scored with sacreBLEU, with paired
bootstrap resampling (sacrebleu --paired-bs) of each system against the fine-tuned one. Every command is
printed before it runs; the table is written to runs/<name>/results.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
from pathlib import Path

from study_support import BIBLE, ROOT, paired_bootstrap, study_directory

NEW_TESTAMENT = {
    "Matt",
    "Mark",
    "Luke",
    "John",
    "Acts",
    "Rom",
    "1Cor",
    "2Cor",
    "Gal",
    "Eph",
    "Phil",
    "Col",
    "1Thess",
    "2Thess",
    "1Tim",
    "2Tim",
    "Titus",
    "Phlm",
    "Heb",
    "Jas",
    "1Pet",
    "2Pet",
    "1John",
    "2John",
    "3John",
    "Jude",
    "Rev",
}


def run(command: list[str], log: Path | None = None) -> None:
    """Run one command of the study; a failure stops the study with the command and where its log is."""
    print("$", shlex.join(command), flush=True)
    if log is None:
        code = subprocess.run(command, check=False, cwd=ROOT).returncode
    else:
        with log.open("w", encoding="utf-8") as handle:
            code = subprocess.run(
                command, check=False, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT
            ).returncode
    if code:
        raise SystemExit(
            f"the study stopped: {command[0]} exited with {code}" + (f"; see {log}" if log else "")
        )


def split_by_testament(out: Path, nt_train: int) -> None:
    """data/.../{ot,nt}/{train,dev,test}.{en,es}: the corpus's own split, cut by book; NT train is the
    first `nt_train` NT verses of the training split (whole chapters, in Bible order)."""
    for testament in ("ot", "nt"):
        (out / testament).mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        books = [
            line.split("\t")[0].split(".")[0] for line in (BIBLE / f"{split}.ids").read_text().splitlines()
        ]
        for lang in ("en", "es"):
            lines = (BIBLE / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
            old = [text for text, book in zip(lines, books) if book not in NEW_TESTAMENT]
            new = [text for text, book in zip(lines, books) if book in NEW_TESTAMENT]
            if split == "train":
                new = new[:nt_train]
            (out / "ot" / f"{split}.{lang}").write_text("\n".join(old) + "\n", encoding="utf-8")
            (out / "nt" / f"{split}.{lang}").write_text("\n".join(new) + "\n", encoding="utf-8")


def train(bin_dir: Path, run_name: str, data_dir: Path, minutes: float, extra: list[str]) -> Path:
    run_dir = ROOT / "runs" / run_name
    command = [
        str(bin_dir / "seq2seq-train"),
        "data=parallel_files",
        f"data.dir={data_dir}",
        "data.src_lang=en",
        "data.tgt_lang=es",
        f"run_name={run_name}",
        f"trainer.max_minutes={minutes}",
        "trainer.progress_bar=false",
        *extra,
    ]
    run(command, ROOT / "runs" / f"{run_name}.log")
    summary = json.loads((run_dir / "summary.json").read_text())
    chosen = (summary.get("final") or {}).get("checkpoint") or "last.pt"
    return run_dir / Path(chosen).name


def translate(bin_dir: Path, checkpoint: Path, source: Path, output: Path) -> None:
    run(
        [
            str(bin_dir / "seq2seq-translate"),
            f"checkpoint={checkpoint}",
            f"input={source}",
            f"output={output}",
            "decode=beam",
            "decode.beam_size=5",
        ]
    )


def study_arguments(description: str, *, name: str, adapt: str) -> argparse.ArgumentParser:
    """The options of the studies built on this one's setting (an OT base model, adapted to the NT)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-minutes", type=float, default=12.0, help="training the OT base model")
    parser.add_argument("--adapt-minutes", type=float, default=4.0, help=adapt)
    parser.add_argument("--nt-train", type=int, default=2000, help="NT training verses")
    parser.add_argument("--name", default=name, help="runs/<name>/ and the run names' prefix")
    parser.add_argument(
        "--bin", type=Path, default=ROOT / ".venv" / "bin", help="where the seq2seq commands are"
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = study_arguments(
        __doc__, name="domain-adaptation", adapt="fine-tuning, and training from scratch"
    )
    args = parser.parse_args(argv)
    work = study_directory(args.name, needs="train.ids")
    data = work / "data"
    split_by_testament(data, args.nt_train)
    base = train(args.bin, f"{args.name}-base-ot", data / "ot", args.base_minutes, ["model=marian"])
    hub = work / "base-hf"
    run(
        [
            str(args.bin / "seq2seq-export"),
            f"checkpoint={base}",
            f"output_dir={hub}",
            "target=huggingface",
            "force=true",
        ]
    )
    imported = work / "base-imported.pt"
    run([str(args.bin / "seq2seq-import"), f"input_dir={hub}", f"output={imported}", "force=true"])
    finetuned = train(
        args.bin,
        f"{args.name}-finetuned-nt",
        data / "nt",
        args.adapt_minutes,
        ["experiment=finetune", f"init_from={imported}"],
    )
    scratch = train(args.bin, f"{args.name}-scratch-nt", data / "nt", args.adapt_minutes, ["model=marian"])
    outputs = {}
    for name, checkpoint in (("finetuned", finetuned), ("base", imported), ("scratch", scratch)):
        outputs[name] = work / f"test.{name}.es"
        translate(args.bin, checkpoint, data / "nt" / "test.en", outputs[name])
    table = paired_bootstrap(data / "nt" / "test.es", outputs)
    (work / "results.md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()

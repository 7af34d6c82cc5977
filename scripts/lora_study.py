#!/usr/bin/env python
"""LoRA against full fine-tuning at equal time: the study in docs/studies/lora.md.

    python scripts/lora_study.py                       # 12 minutes of base training, then 3 x 4 minutes
    python scripts/lora_study.py --base-minutes 2 --adapt-minutes 1 --nt-train 500  # a smoke run

The setting is the domain-adaptation study's (scripts/domain_adaptation_study.py): a Marian-shaped base model
trained on the Old Testament, exported to a Hugging Face directory and imported back as a downloaded model
is, then adapted to a small New Testament training set (--nt-train verses) for --adapt-minutes each:
  full         experiment=finetune: every weight trained, its learning rate (1e-4)
  lora         experiment=finetune 'trainer.lora={rank: 8, alpha: 16}' schedule.peak_lr=1e-3: adapters on
               the attention's input projections only (the default targets)
  lora-all     the same with adapters on every linear projection (qkv, q, kv, out, up, down)
  base         the imported model as it is
LoRA trains a fraction of the values, so it takes the larger learning rate LoRA is usually run with. Each
system translates the corpus's New Testament test verses with beam 5 and is scored with sacreBLEU's paired
bootstrap against full fine-tuning. Every command is printed before it runs; the table is written to
runs/<name>/results.md, and the updates and values trained of each run to runs/<name>/runs.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from domain_adaptation_study import run, split_by_testament, study_arguments, train, translate
from study_support import ROOT, paired_bootstrap, study_directory

ADAPTERS = {
    "lora": "trainer.lora={rank: 8, alpha: 16}",
    "lora-all": "trainer.lora={rank: 8, alpha: 16, targets: [qkv, q, kv, out, up, down]}",
}
LORA_LEARNING_RATE = "schedule.peak_lr=1e-3"


def base_model(args: argparse.Namespace, work: Path, data: Path) -> Path:
    """The OT base model, trained, exported to a Hugging Face directory and imported back."""
    base = train(args.bin, f"{args.name}-base-ot", data / "ot", args.base_minutes, ["model=marian"])
    hub = work / "base-hf"
    export = [f"checkpoint={base}", f"output_dir={hub}", "target=huggingface", "force=true"]
    run([str(args.bin / "seq2seq-export"), *export])
    imported = work / "base-imported.pt"
    run([str(args.bin / "seq2seq-import"), f"input_dir={hub}", f"output={imported}", "force=true"])
    return imported


def run_record(name: str, run_name: str) -> str:
    """One Markdown row of what a run did: updates, minutes, values trained, dev BLEU at start and best."""
    summary = json.loads((ROOT / "runs" / run_name / "summary.json").read_text())
    start = next((r.get("bleu") for r in summary["history"] if r.get("step") == 0), None)
    return (f"| {name} | {summary['updates']} | {summary['minutes']:.1f} | {summary['parameters']:,} | "
            f"{start if start is None else round(start, 2)} | {summary['best_dev_bleu']:.2f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    args = study_arguments(__doc__, name="lora-study", adapt="each fine-tuning run").parse_args(argv)
    work = study_directory(args.name, needs="train.ids")
    data = work / "data"
    split_by_testament(data, args.nt_train)
    imported = base_model(args, work, data)
    arms = {"full": [], **{name: [adapters, LORA_LEARNING_RATE] for name, adapters in ADAPTERS.items()}}
    checkpoints, records = {}, []
    for name, extra in arms.items():
        run_name = f"{args.name}-{name}-nt"
        settings = ["experiment=finetune", f"init_from={imported}", *extra]
        checkpoints[name] = train(args.bin, run_name, data / "nt", args.adapt_minutes, settings)
        records.append(run_record(name, run_name))
    checkpoints["base"] = imported
    outputs = {}
    for name, checkpoint in checkpoints.items():
        outputs[name] = work / f"test.{name}.es"
        translate(args.bin, checkpoint, data / "nt" / "test.en", outputs[name])
    header = "| run | updates | minutes | values trained | NT dev BLEU at start | best NT dev BLEU |\n"
    runs = header + "|---|---:|---:|---:|---:|---:|\n" + "\n".join(records) + "\n"
    (work / "runs.md").write_text(runs, encoding="utf-8")
    table = paired_bootstrap(data / "nt" / "test.es", outputs)
    (work / "results.md").write_text(table, encoding="utf-8")
    print(runs)
    print(table)


if __name__ == "__main__":
    main()

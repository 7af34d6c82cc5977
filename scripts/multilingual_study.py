#!/usr/bin/env python
"""One model for both directions of the Bible corpus against one model per direction, at equal training
time. docs/studies/multilingual.md reports a run of it.

1. prepare  seq2seq-prepare for data=bible_en_es in each direction and for data=bible_en_es_both, so that
            no run trains its tokenizer or encodes its corpus inside its training time.
2. train    en->es and es->en, --minutes / 2 each (the pair of single models: --minutes together), and the
            multilingual model on both (configs/data/bible_en_es_both.yaml) for --minutes; all with the
            recipe this CPU gets (seq2seq.cli.config.recipe_choice) and the quickstart's end of run (averaging
            the last 20%, the final choice, tuned decoding). A run with a summary.json is kept.
3. test     beam 5 on each direction's test verses: scripts/decode_and_score.sh for a single model,
            scripts/score_directions.py for the multilingual one (the same script, per direction).
4. compare  per direction BLEU/chrF, sacreBLEU's paired bootstrap (1,000 resamples) of the multilingual
            model against the single one, parameters, checkpoint size, sentences/s; runs/<name>/results.json
            and a Markdown table on stdout.
5. tuning   would tuning the length penalty per direction help? trainer.tune_decoding (seq2seq.train.
            tune_decoding) run on each direction's dev set alone (the same 500-sentence sample size), its
            choice and BLEU per penalty beside the one penalty the run chose for both.

    python scripts/multilingual_study.py --minutes 30
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIBLE = ROOT / "data" / "bible_en_es"
sys.path.insert(0, str(ROOT / "scripts"))

from study_support import BOOTSTRAP, run, sacrebleu_command  # noqa: E402

DIRECTIONS = (("en", "es"), ("es", "en"))


def recipe(bin_dir: Path) -> str:
    """The experiment the quickstart would pick on this CPU ("" for seq2seq-train's defaults)."""
    choice = subprocess.run([str(bin_dir / "python"), "-m", "seq2seq.cli.config.recipe_choice"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    return choice.split("\t", 1)[0].strip()


def prepare(args: argparse.Namespace) -> None:
    log = ROOT / "runs" / f"{args.name}-prepare.log"
    for src, tgt in DIRECTIONS:
        run([str(args.bin / "seq2seq-prepare"), f"data.src_lang={src}", f"data.tgt_lang={tgt}"], log)
    run([str(args.bin / "seq2seq-prepare"), "data=bible_en_es_both"], log)


def train(args: argparse.Namespace, experiment: str) -> dict[str, Path]:
    """The three runs (each skipped when its summary.json exists); their run directories by label."""
    end = ["trainer.average_fraction=0.2", "trainer.tune_decoding=true"] + ([f"experiment={experiment}"] if experiment else [])
    plans = {f"{src}-{tgt}": ([f"data.src_lang={src}", f"data.tgt_lang={tgt}"], args.minutes / 2) for src, tgt in DIRECTIONS}
    plans["both"] = (["data=bible_en_es_both"], args.minutes)
    runs = {}
    for label, (data, minutes) in plans.items():
        name = f"{args.name}-{label}"
        run_dir = ROOT / "runs" / name
        if not (run_dir / "summary.json").is_file():
            command = [str(args.bin / "seq2seq-train"), *data, f"run_name={name}", f"trainer.max_minutes={minutes:g}", *end]
            run(command, ROOT / "runs" / f"{name}.log")
        runs[label] = run_dir
    return runs


def test(args: argparse.Namespace, runs: dict[str, Path]) -> dict[str, dict[str, Path]]:
    """Each direction's scores.json, per system ("single", "multilingual")."""
    env = {"BIN": str(args.bin)}
    found: dict[str, dict[str, Path]] = {}
    for src, tgt in DIRECTIONS:
        label = f"{src}-{tgt}"
        out = runs[label] / f"test.{label}"
        if not (out / "scores.json").is_file():
            command = ["bash", "scripts/decode_and_score.sh", str(chosen(runs[label])), str(BIBLE / f"test.{src}"),
                       str(BIBLE / f"test.{tgt}"), str(out), "decode=beam", "decode.beam_size=5"]  # fmt: skip
            run(command, ROOT / "runs" / f"{args.name}-test.log", env)
        found[label] = {"single": out / "scores.json", "multilingual": runs["both"] / f"test.{label}" / "scores.json"}
    if not (runs["both"] / "test_directions.json").is_file():
        run([str(args.bin / "python"), "scripts/score_directions.py", str(runs["both"])],
            ROOT / "runs" / f"{args.name}-test.log", env)  # fmt: skip
    return found


def chosen(run_dir: Path) -> Path:
    summary = json.loads((run_dir / "summary.json").read_text())
    return run_dir / Path(summary["checkpoint"]).name


def paired_bootstrap(reference: Path, baseline: Path, system: Path) -> dict[str, float]:
    """sacreBLEU's paired bootstrap p-values (BLEU, chrF) of `system` against `baseline`."""
    command = sacrebleu_command(reference, [baseline, system], *BOOTSTRAP, "-f", "text")
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    values = [float(p) for p in re.findall(r"p = ([0-9.]+)", output)]
    return {"bleu_p": values[0], "chrf_p": values[1]} if len(values) >= 2 else {}


def compare(args: argparse.Namespace, runs: dict[str, Path], scores: dict[str, dict[str, Path]]) -> dict:
    summaries = {label: json.loads((path / "summary.json").read_text()) for label, path in runs.items()}
    results: dict = {"runs": {}, "directions": {}}
    for label, summary in summaries.items():
        checkpoint = chosen(runs[label])
        results["runs"][label] = {
            "minutes": round(summary["minutes"], 1), "updates": summary["updates"],
            "tokens_per_second": round(summary["tokens_per_second"] or 0), "parameters": summary["parameters"],
            "checkpoint": checkpoint.name, "checkpoint_mb": round(checkpoint.stat().st_size / 2**20, 1),
            "best_dev_bleu": summary["best_dev_bleu"], "dev_directions": summary.get("dev_directions"),
        }  # fmt: skip
    for src, tgt in DIRECTIONS:
        label = f"{src}-{tgt}"
        row = {}
        for system, path in scores[label].items():
            record = json.loads(path.read_text())
            row[system] = {"bleu": record["metrics"]["bleu"]["score"], "chrf": record["metrics"]["chrf"]["score"],
                           "sentences_per_second": record["sentences_per_second"]}  # fmt: skip
        hypotheses = {system: path.parent / "hypotheses.txt" for system, path in scores[label].items()}
        row["paired_bootstrap"] = paired_bootstrap(BIBLE / f"test.{tgt}", hypotheses["single"], hypotheses["multilingual"])
        results["directions"][label] = row
    (ROOT / "runs" / args.name).mkdir(parents=True, exist_ok=True)
    (ROOT / "runs" / args.name / "results.json").write_text(json.dumps(results, indent=2))
    return results


def tuning(runs: dict[str, Path], results: dict) -> dict:
    """tune_decoding on each dev direction alone with the multilingual model's chosen checkpoint."""
    import torch

    from seq2seq.inference.loading import load_for_inference
    from seq2seq.inference.translator import Translator
    from seq2seq.precision import resolve_precision
    from seq2seq.train.tune_decoding import tune_decoding
    from seq2seq.train.validation import Validator

    checkpoint = chosen(runs["both"])
    device = torch.device("cpu")
    loaded = load_for_inference(checkpoint, device)
    translator = Translator.from_checkpoint(checkpoint)
    pooled = json.loads((runs["both"] / "summary.json").read_text()).get("decoding") or {}
    found = {"pooled": {k: pooled.get(k) for k in ("values", "chosen", "bleu", "default_bleu", "sentences")}}
    for src, tgt in DIRECTIONS:
        sources = (BIBLE / f"dev.{src}").read_text(encoding="utf-8").splitlines()
        references = (BIBLE / f"dev.{tgt}").read_text(encoding="utf-8").splitlines()
        chosen_one = translator.for_languages(src_lang=src, tgt_lang=tgt)
        encoded = chosen_one.encode(sources)
        validator = Validator(
            dev=[(torch.tensor(ids),) for ids in encoded.sources], dev_batches=[], make_batch=lambda i: None,
            dev_src_texts=sources, dev_ref_texts=references, src_tokenizer=chosen_one.src_tokenizer,
            tgt_tokenizer=chosen_one.tgt_tokenizer, loss_fn=lambda *a: None, device=device,
            precision=resolve_precision("auto", device), search=chosen_one.options, max_tokens=4096,
        )  # fmt: skip
        record = tune_decoding(loaded.model, validator, sentences=500)
        found[f"{src}-{tgt}"] = {k: record[k] for k in ("values", "chosen", "bleu", "default_bleu", "penalties")}
        print(f"tuned on {src}-{tgt} alone: {record['values']} (chosen: {record['chosen']}; "
              f"{record['bleu']:.2f} vs {record['default_bleu']:.2f} at the defaults)", flush=True)
    results["tuning"] = found
    return results


def table(results: dict) -> str:
    lines = ["| direction | single BLEU / chrF | multilingual BLEU / chrF | p (BLEU, chrF) | sentences/s single / multi |",
             "|---|---|---|---|---|"]  # fmt: skip
    for label, row in results["directions"].items():
        single, multi, test = row["single"], row["multilingual"], row["paired_bootstrap"]
        lines.append(f"| {label} | {single['bleu']:.1f} / {single['chrf']:.1f} | {multi['bleu']:.1f} / {multi['chrf']:.1f} "
                     f"| {test.get('bleu_p', float('nan')):.3f}, {test.get('chrf_p', float('nan')):.3f} "
                     f"| {single['sentences_per_second']:.1f} / {multi['sentences_per_second']:.1f} |")  # fmt: skip
    lines += ["", "| run | minutes | updates | tokens/s | parameters | checkpoint MB | best dev BLEU |", "|---|---|---|---|---|---|---|"]
    for label, record in results["runs"].items():
        lines.append(f"| {label} | {record['minutes']} | {record['updates']:,} | {record['tokens_per_second']:,} "
                     f"| {record['parameters']:,} | {record['checkpoint_mb']} | {record['best_dev_bleu']:.2f} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="training time of the multilingual model")
    parser.add_argument("--name", default="multilingual", help="run directories runs/<name>-{en-es,es-en,both}")
    parser.add_argument("--bin", type=Path, default=ROOT / ".venv" / "bin", help="the environment's bin directory")
    args = parser.parse_args()
    experiment = recipe(args.bin)
    print(f"recipe: {experiment or 'seq2seq-train defaults'}", flush=True)
    prepare(args)
    runs = train(args, experiment)
    scores = test(args, runs)
    results = tuning(runs, compare(args, runs, scores))
    (ROOT / "runs" / args.name / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()

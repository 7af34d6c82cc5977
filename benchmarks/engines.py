#!/usr/bin/env python
"""Serving a trained model: our own search against CTranslate2 (float32 and int8) on the Bible test set.

    python benchmarks/engines.py                                  # runs/quickstart/best.pt, beam 5, 3 rounds
    python benchmarks/engines.py --checkpoint runs/x/best.pt --rounds 5 --limit 400
    python benchmarks/engines.py --train-minutes 10               # no checkpoint yet: train one first

The checkpoint is exported with seq2seq-export (float32 and int8). Each round runs every engine in a
fresh process, one after another (interleaved, so load drifts hit them alike), translating the test
set with beam 5 through the same Translator (same input policy, batches of --max-tokens tokens),
on --threads threads. Reported: sentences/s of the best round (model loading excluded), BLEU and chrF
against the references, and the process's peak RSS. Our beam search divides scores by the GNMT
penalty ((5 + len) / 6) ** alpha, CTranslate2 by len ** alpha (alpha = 1 for both), so their
outputs may differ slightly where that changes the ranking.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import describe_machine, format_table, load_average, print_headline, set_threads

ROOT = Path(__file__).resolve().parents[1]
ENGINES = {"ours fp32": None, "CTranslate2 float32": "float32", "CTranslate2 int8": "int8"}


def worker(model: str, source: Path, threads: int, max_tokens: int, beam: int) -> dict:
    """In a fresh process: load, translate once, report seconds, outputs and peak RSS."""
    import torch

    from seq2seq import Translator

    torch.set_num_threads(threads)  # CTranslate2 engines take the same number of threads
    translator = Translator.from_checkpoint(model)
    lines = source.read_text(encoding="utf-8").splitlines()
    start = time.perf_counter()
    outputs = translator.translate(lines, beam_size=beam, max_tokens=max_tokens)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "outputs": outputs, "peak_rss": peak}


def run_worker(model: str, args: argparse.Namespace, source: Path) -> dict:
    command = [sys.executable, __file__, "--worker", model, "--source", str(source)]
    command += [
        "--threads",
        str(args.threads),
        "--max-tokens",
        str(args.max_tokens),
        "--beam",
        str(args.beam),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(args.threads)}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        sys.exit(f"{model}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def ensure_checkpoint(args: argparse.Namespace) -> Path:
    if args.checkpoint.is_file():
        return args.checkpoint
    if not args.train_minutes:
        sys.exit(f"{args.checkpoint} does not exist; run scripts/quickstart.sh or pass --train-minutes 10")
    run_name = f"engines_{int(args.train_minutes)}min"
    subprocess.run([sys.executable, "-m", "seq2seq.cli.prepare"], cwd=ROOT, check=True)
    train = [sys.executable, "-m", "seq2seq.cli.train", f"run_name={run_name}"]
    train += [f"trainer.max_minutes={args.train_minutes}", "trainer.progress_bar=false"]
    subprocess.run(train, cwd=ROOT, check=True)
    return ROOT / "runs" / run_name / "best.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=ROOT / "runs" / "quickstart" / "best.pt")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bible_en_es")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="translate only the first N test sentences")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--train-minutes", type=float, default=0)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.source, args.threads, args.max_tokens, args.beam)))
        return
    print(describe_machine(set_threads(args.threads)))
    compare(args, ensure_checkpoint(args))


def compare(args: argparse.Namespace, checkpoint: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from seq2seq.decode.score import score_corpus
    from seq2seq.export.ctranslate2 import export_ctranslate2

    with tempfile.TemporaryDirectory() as scratch:
        source, references = Path(scratch) / "test.en", (args.data_dir / "test.es").read_text().splitlines()
        lines = (args.data_dir / "test.en").read_text(encoding="utf-8").splitlines()[: args.limit]
        references = references[: len(lines)]
        source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        models = {
            name: str(
                checkpoint if q is None else export_ctranslate2(checkpoint, Path(scratch) / q, quantization=q)
            )
            for name, q in ENGINES.items()
        }
        runs: dict[str, list[dict]] = {name: [] for name in ENGINES}
        for _ in range(args.rounds):
            for name, model in models.items():
                runs[name].append(run_worker(model, args, source))
    rows, results = [], {}
    for name, measured in runs.items():
        best = min(measured, key=lambda r: r["seconds"])
        scores = score_corpus(best["outputs"], [references], metrics=["bleu", "chrf"])
        r = results[name] = {
            "speed": len(lines) / best["seconds"],
            "bleu": scores["bleu"]["score"],
            "chrf": scores["chrf"]["score"],
            "peak": max(run["peak_rss"] for run in measured),
        }
        spread = max(run["seconds"] for run in measured) / best["seconds"] - 1
        rows.append([name, f"{r['speed']:.1f}", f"{spread:.0%}", f"{r['bleu']:.2f}", f"{r['chrf']:.2f}"])
        rows[-1].append(f"{r['peak'] / 2**20:,.0f}")
    setting = f"beam {args.beam}, {args.threads} threads, best of {args.rounds} rounds"
    print(f"\n{len(lines)} test sentences, {setting}\n")
    print(format_table(["engine", "sentences/s", "spread", "BLEU", "chrF", "peak RSS MiB"], rows))
    ours, ct2, int8 = (results[name] for name in ENGINES)
    speed = f"{ours['speed'] / ct2['speed']:.2f}x"
    print_headline(f"beam {args.beam} sentences/s, Bible test set", "CTranslate2 float32", speed, ">= 0.8x")
    loss = f"{int8['bleu'] - ours['bleu']:+.2f}"
    print_headline("BLEU, CTranslate2 int8 minus ours fp32", "ours fp32", loss, ">= -0.5")
    print_headline(
        f"beam {args.beam} sentences/s", "CTranslate2 int8", f"{ours['speed'] / int8['speed']:.2f}x"
    )
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()

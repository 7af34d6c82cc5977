#!/usr/bin/env python
"""Our own search against CTranslate2 on the Bible test set: float32, compiled, int8 and shortlists.

    python benchmarks/engines.py                                  # runs/quickstart/best.pt, greedy and beam 5
    python benchmarks/engines.py --checkpoint runs/x/best.pt --rounds 5 --limit 400 --beams 5
    python benchmarks/engines.py --train-minutes 10               # no checkpoint yet: train one first

Rows: ours in float32, compiled (compile=true: a torch.compile'd decoder step on static caches), in
int8 (quantization=int8: PyTorch's dynamic int8 kernels) and in int8 with a vocabulary shortlist
(seq2seq-shortlist over the training text, its default sizes); CTranslate2 float32
and int8 (seq2seq-export), and int8 with the same shortlist as its vocabulary map (vmap.txt, use_vmap).
--preload runs every process with another memory allocator (tcmalloc, jemalloc): peak RSS depends on it.
Each round runs every engine and search in a fresh process, one after another (interleaved, so load
drifts hit them alike), translating the test set through the same Translator (same input policy,
batches of --max-tokens tokens) on --threads threads. Reported: sentences/s of the best round (model
loading excluded), BLEU and chrF against the references, and the process's peak RSS. The compiled row
translates the test set twice in its process and reports the second pass; the first, compiling
included, is printed after the table. Our beam search
divides scores by the GNMT penalty ((5 + len) / 6) ** alpha, CTranslate2 by len ** alpha (alpha = 1 for
both), so their outputs may differ slightly where that changes the ranking.
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
# engine -> (model: "checkpoint" or an export's quantization, our quantization, shortlist / vmap, compile)
ENGINES = {
    "ours fp32": ("checkpoint", "none", False, False),
    "ours compiled fp32": ("checkpoint", "none", False, True),
    "ours int8": ("checkpoint", "int8", False, False),
    "ours int8 + shortlist": ("checkpoint", "int8", True, False),
    "CTranslate2 float32": ("float32", "none", False, False),
    "CTranslate2 int8": ("int8", "none", False, False),
    "CTranslate2 int8 + vmap": ("int8", "none", True, False),
}


def worker(args: argparse.Namespace) -> dict:
    """In a fresh process: load, translate (compiled: twice, the second pass timed), report seconds,
    outputs and peak RSS."""
    import torch

    from seq2seq import Translator

    torch.set_num_threads(args.threads)  # CTranslate2 engines take the same number of threads
    shortlist = args.shortlist or None
    model = args.worker.split(",") if "," in args.worker else args.worker  # several: an ensemble
    translator = Translator.from_checkpoint(
        model, quantization=args.quantization, shortlist=shortlist, compile=args.compile
    )
    lines = args.source.read_text(encoding="utf-8").splitlines()
    passes = []
    for _ in range(2 if args.compile == "true" else 1):
        start = time.perf_counter()
        outputs = [
            str(t) for t in translator.translate(lines, beam_size=args.beam, max_tokens=args.max_tokens)
        ]
        passes.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": passes[-1], "first_pass": passes[0], "outputs": outputs, "peak_rss": peak}


def run_worker(model: str, args: argparse.Namespace, source: Path, beam: int, quantization: str,
               shortlist: str, compiled: bool) -> dict:  # fmt: skip
    command = [sys.executable, __file__, "--worker", model, "--source", str(source), "--beam", str(beam)]
    command += ["--threads", str(args.threads), "--max-tokens", str(args.max_tokens)]
    command += ["--quantization", quantization, "--shortlist", shortlist]
    command += ["--compile", "true" if compiled else "false"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(args.threads)}
    if args.preload:
        env["LD_PRELOAD"] = str(args.preload)  # every engine's process, ours and CTranslate2's alike
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
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5], help="beam sizes (1: greedy)")
    parser.add_argument("--train-minutes", type=float, default=0)
    allocator = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 (Debian: libtcmalloc-minimal4)"
    allocator = f"a memory allocator every engine's process runs with (LD_PRELOAD), e.g. {allocator}"
    parser.add_argument("--preload", type=Path, default=None, help=allocator)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--beam", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--quantization", default="none", help=argparse.SUPPRESS)
    parser.add_argument("--shortlist", default="", help=argparse.SUPPRESS)
    parser.add_argument("--compile", default="false", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    if args.preload and not args.preload.is_file():
        sys.exit(f"--preload {args.preload} does not exist; install the allocator or pass its path")
    print(describe_machine(set_threads(args.threads)))
    print(f"allocator: {args.preload or 'the C library malloc'}")
    compare(args, ensure_checkpoint(args))


def prepare_models(args: argparse.Namespace, checkpoint: Path, scratch: Path) -> tuple[dict[str, str], str]:
    """Each engine's model path, and the shortlist file (built from the training text)."""
    from seq2seq.export.ctranslate2 import export_ctranslate2

    shortlist = scratch / "shortlist.pt"
    build = [sys.executable, "-m", "seq2seq.cli.shortlist", f"checkpoint={checkpoint}", f"output={shortlist}"]
    build += [f"src_file={args.data_dir / 'train.en'}", f"tgt_file={args.data_dir / 'train.es'}"]
    subprocess.run(
        build, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    models = {}
    for name, (model, _, mapped, _) in ENGINES.items():
        if model == "checkpoint":
            models[name] = str(checkpoint)
            continue
        directory = scratch / (model + ("-vmap" if mapped else ""))
        export_ctranslate2(
            checkpoint, directory, weight_format=model, shortlist=shortlist if mapped else None
        )
        models[name] = str(directory)
    return models, str(shortlist)


def compare(args: argparse.Namespace, checkpoint: Path) -> None:
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as scratch:
        source, references = Path(scratch) / "test.en", (args.data_dir / "test.es").read_text().splitlines()
        lines = (args.data_dir / "test.en").read_text(encoding="utf-8").splitlines()[: args.limit]
        references = references[: len(lines)]
        source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        models, shortlist = prepare_models(args, checkpoint, Path(scratch))
        runs: dict[tuple[str, int], list[dict]] = {
            (name, beam): [] for beam in args.beams for name in ENGINES
        }
        for _ in range(args.rounds):
            for name, beam in runs:
                _, quantization, mapped, compiled = ENGINES[name]
                ours_shortlist = shortlist if mapped and models[name] == str(checkpoint) else ""
                runs[name, beam].append(
                    run_worker(models[name], args, source, beam, quantization, ours_shortlist, compiled)
                )
    results = summarise(runs, references, args)
    headlines(results, args)
    for beam in args.beams:
        first = [run["first_pass"] for run in runs["ours compiled fp32", beam]]
        print(f"ours compiled fp32, {search_name(beam)}: first pass, compiling included: "
              f"{min(first):.1f}-{max(first):.1f} s")  # fmt: skip
    print(f"load average at the end: {load_average()}")


def search_name(beam: int) -> str:
    return "greedy" if beam == 1 else f"beam {beam}"


def summarise(
    runs: dict[tuple[str, int], list[dict]], references: list[str], args: argparse.Namespace
) -> dict:
    """Print the table; return (engine, beam) -> speed (best round), BLEU, chrF and peak RSS (largest)."""
    from seq2seq.metrics import score_corpus

    rows, results = [], {}
    for (name, beam), measured in runs.items():
        best = min(measured, key=lambda r: r["seconds"])
        scores = score_corpus(best["outputs"], [references], metrics=["bleu", "chrf"])
        r = results[name, beam] = {
            "speed": len(references) / best["seconds"],
            "bleu": scores["bleu"]["score"],
            "chrf": scores["chrf"]["score"],
            "peak": max(run["peak_rss"] for run in measured),
        }
        spread = max(run["seconds"] for run in measured) / best["seconds"] - 1
        rows.append([name, search_name(beam), f"{r['speed']:.1f}", f"{spread:.0%}", f"{r['bleu']:.2f}",
                     f"{r['chrf']:.2f}", f"{r['peak'] / 2**20:,.0f}"])  # fmt: skip
    print(f"\n{len(references)} test sentences, {args.threads} threads, best of {args.rounds} rounds\n")
    header = ["engine", "search", "sentences/s", "spread", "BLEU", "chrF", "peak RSS MiB"]
    print(format_table(header, rows))
    return results


def headlines(results: dict, args: argparse.Namespace) -> None:
    """The ratios against the targets: speed per search, BLEU, peak RSS."""
    for beam in args.beams:
        search, speed = search_name(beam), {name: results[name, beam]["speed"] for name in ENGINES}
        ours, ct2 = speed["ours fp32"], speed["CTranslate2 float32"]
        fastest = {side: max((v, name) for name, v in speed.items() if name.startswith(side))
                   for side in ("ours", "CTranslate2")}  # fmt: skip
        print_headline(f"{search} sentences/s, our fastest row ({fastest['ours'][1]})",
                       f"CTranslate2's fastest ({fastest['CTranslate2'][1]})",
                       f"{fastest['ours'][0] / fastest['CTranslate2'][0]:.2f}x", ">= 1.2x")  # fmt: skip
        compiled = speed["ours compiled fp32"]
        print_headline(
            f"{search} sentences/s, ours fp32", "CTranslate2 float32", f"{ours / ct2:.2f}x", ">= 1.0x"
        )
        print_headline(f"{search} sentences/s, ours compiled fp32", "ours fp32 (eager)",
                       f"{compiled / ours:.2f}x", "> 1.0x, or compile=auto never compiles it")  # fmt: skip
        for variant in ("ours int8", "ours int8 + shortlist"):
            ratio = f"{speed[variant] / speed['CTranslate2 int8']:.2f}x"
            print_headline(f"{search} sentences/s, {variant}", "CTranslate2 int8", ratio, ">= 1.0x")
        worst = min(
            (results[name, beam]["bleu"] - results["ours fp32", beam]["bleu"], name) for name in ENGINES
        )
        measurement = f"{search} BLEU, worst row minus ours fp32 ({worst[1]})"
        print_headline(measurement, "ours fp32", f"{worst[0]:+.2f}", ">= -0.3")
    peaks = {name: max(r["peak"] for (n, _), r in results.items() if n == name) for name in ENGINES}
    ct2_peak = max(peak for name, peak in peaks.items() if name.startswith("CTranslate2"))
    eager = max(peak for name, peak in peaks.items() if name.startswith("ours") and "compiled" not in name)
    print_headline("peak RSS, ours eager (largest row)", "CTranslate2 (largest row)",
                   f"{eager / ct2_peak:.2f}x", "<= 1.2x")  # fmt: skip
    print_headline("peak RSS, ours compiled (the compiler's own memory)", "CTranslate2",
                   f"{peaks['ours compiled fp32'] / ct2_peak:.2f}x", "<= 1.2x")  # fmt: skip


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Corpora of any size: prepare time and memory, and a training process's start and memory, by corpus size.

    seq2seq-prepare                                   # once: the Bible corpus the large corpora are made from
    python benchmarks/data_scale.py                   # 250k, 1M and 2M pairs (about 15 minutes on 2 cores)
    python benchmarks/data_scale.py --sizes 20000 --baseline-sizes 20000     # a smoke run
    python benchmarks/data_scale.py --baseline-rev bf51383 --baseline-sizes 250000 1000000

Corpora are made from data/bible_en_es/train.{en,es} by joining 1-3 consecutive verses (a pair of
such joins is one sentence pair), so lengths and vocabulary stay realistic; they are written once to
--work-dir and reused. For each size, in fresh processes:
  * prepare: `seq2seq-prepare data=parallel_files ...` on a cold cache (tokenizer on the default
    200,000-sentence sample, encoding by all cores): wall time, sentences/s, peak RSS of the whole
    process tree (workers included; summed over the tree every 50 ms, so shared pages count once per
    process);
  * train: `seq2seq-train` with that cache (a cache hit): seconds from start to the log line of the
    first update, and the training process's peak RSS (VmHWM) over 3 updates of the `tiny` model.
The peer is this project's previous pipeline (--baseline-rev, a git revision of this repository,
default bf51383): it encoded the corpus inside seq2seq-train, in one process, into memory. It runs
at --baseline-sizes only (it needs about 5 GB of memory per million pairs); its "prepare" is its
first training run up to the first update, its "train" the second run (cache hit).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from common import describe_machine, format_table, load_average, print_headline, set_threads

ROOT = Path(__file__).resolve().parents[1]
FIRST_UPDATE = re.compile(r"update 1 \|")


@dataclass
class Measured:
    seconds: float
    peak_rss: int  # bytes
    first_update: float | None = None  # seconds from start to the first update's log line


def make_corpus(bible: Path, out: Path, pairs: int, *, seed: int = 0) -> Path:
    """`pairs` pairs of 1-3 consecutive joined verses, plus the Bible dev set, in `out` (reused if there)."""
    if (out / "train.es").is_file() and (out / "dev.es").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    src = (bible / "train.en").read_text(encoding="utf-8").splitlines()
    tgt = (bible / "train.es").read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    with (
        open(out / "train.en.tmp", "w", encoding="utf-8") as en,
        open(out / "train.es.tmp", "w", encoding="utf-8") as es,
    ):
        for _ in range(pairs):
            start, width = rng.randrange(len(src) - 3), rng.randint(1, 3)
            en.write(" ".join(src[start : start + width]) + "\n")
            es.write(" ".join(tgt[start : start + width]) + "\n")
    for lang in ("en", "es"):
        shutil.copy(bible / f"dev.{lang}", out / f"dev.{lang}")
        (out / f"train.{lang}.tmp").replace(out / f"train.{lang}")
    return out


def tree_rss(root: int) -> int:
    """Resident bytes of a process and all its descendants, now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += pages * os.sysconf("SC_PAGE_SIZE")
    return total


def run(command: list[str], *, env: dict[str, str], cwd: Path) -> Measured:
    """Run a command, polling its process tree's RSS; note when the first update's log line appears."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first: list[float] = []
    lines: list[str] = []

    def read() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if not first and FIRST_UPDATE.search(line):
                first.append(time.perf_counter() - start)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.05)
    reader.join()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} ... failed:\n{''.join(lines[-20:])}")
    return Measured(time.perf_counter() - start, peak, first[0] if first else None)


def commands(corpus: Path, cache: Path, run_dir: Path, python: str) -> tuple[list[str], list[str]]:
    data = [
        "data=parallel_files", f"data.dir={corpus}", "data.src_lang=en", "data.tgt_lang=es",
        f"data.cache_dir={cache}",
    ]  # fmt: skip
    prepare = [python, "-m", "seq2seq.cli.prepare", *data, "progress_bar=false"]
    train = [
        python, "-m", "seq2seq.cli.train", *data, "model=tiny", "trainer.max_updates=3",
        "trainer.log_every=1", "trainer.validate_bleu=false", "trainer.progress_bar=false",
        "trainer.save_every=null", "trainer.validate_every_minutes=null", "trainer.attention_plot=false",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    return prepare, train


def measure(corpus: Path, source_root: Path, *, ours: bool, work: Path) -> tuple[Measured, Measured]:
    """(prepare, train) for one corpus with the code under `source_root`, in a fresh cache."""
    cache, run_dir = work / "cache", work / "run"
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(source_root), "HYDRA_FULL_ERROR": "1"}
    prepare, train = commands(corpus, cache, run_dir, sys.executable)
    if ours:
        first = run(prepare, env=env, cwd=work)
    else:  # the previous pipeline built its caches in the first training run
        first = run(train, env=env, cwd=work)
        shutil.rmtree(run_dir, ignore_errors=True)
        first.seconds = first.first_update or first.seconds
    shutil.rmtree(run_dir, ignore_errors=True)
    second = run(train, env=env, cwd=work)
    return first, second


def checkout(revision: str, into: Path) -> Path:
    """The package at `revision` of this repository, extracted (no git work tree needed)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "seq2seq", "configs"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250_000, 1_000_000, 2_000_000])
    parser.add_argument("--baseline-sizes", type=int, nargs="*", default=[250_000, 1_000_000])
    parser.add_argument("--baseline-rev", default="bf51383")
    parser.add_argument("--bible", type=Path, default=ROOT / "data" / "bible_en_es")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "data" / "scale")
    parser.add_argument(
        "--throughput-pairs", type=int, default=200_000, help="pairs for the 1-vs-2 worker test"
    )
    args = parser.parse_args()
    if not (args.bible / "train.en").is_file():
        sys.exit(f"{args.bible}/train.en is missing; run seq2seq-prepare first")
    print(describe_machine(set_threads(None)))
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        baseline = checkout(args.baseline_rev, Path(scratch)) if args.baseline_sizes else None
        for size in sorted(set(args.sizes) | set(args.baseline_sizes)):
            corpus = make_corpus(args.bible, args.work_dir / f"pairs_{size}", size)
            pipelines = [
                ("ours", ROOT, args.sizes),
                (f"previous ({args.baseline_rev})", baseline, args.baseline_sizes),
            ]
            for name, root, wanted in pipelines:
                if size not in wanted:
                    continue
                prepare, train = measure(corpus, root, ours=name == "ours", work=Path(scratch) / "work")
                results[(name, size)] = (prepare, train)
                if name == "ours" and size == max(args.sizes):
                    results["throughput"] = encoding_throughput(
                        corpus, Path(scratch) / "work" / "cache", min(size, args.throughput_pairs)
                    )
                rows.append(row(name, size, prepare, train))
                print(format_table(HEADER, rows[-1:]), flush=True)
    print()
    print(format_table(HEADER, rows))
    headlines(results, args)
    print(f"load average at the end: {load_average()}")


def encoding_throughput(corpus: Path, cache: Path, pairs: int) -> dict[int, float]:
    """Sentence pairs/s of the encoding stage alone, 1 worker vs 2, interleaved twice, on `pairs` pairs."""
    sys.path.insert(0, str(ROOT))
    from seq2seq.data.binarize import build_encoded
    from seq2seq.data.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_file(next(cache.glob("spm.*.model")))
    with tempfile.TemporaryDirectory() as scratch:
        head = Path(scratch)
        for lang in ("en", "es"):
            with open(corpus / f"train.{lang}", encoding="utf-8") as source:
                (head / f"train.{lang}").write_text("".join(line for _, line in zip(range(pairs), source)))
        best: dict[int, float] = {}
        for _ in range(2):
            for workers in (1, 2):
                start = time.perf_counter()
                build_encoded(head / "train.en", head / "train.es", head / f"out{workers}",
                              tokenizers=(tokenizer, tokenizer), encoding_errors="strict", workers=workers,
                              progress=False)  # fmt: skip
                best[workers] = max(best.get(workers, 0.0), pairs / (time.perf_counter() - start))
                shutil.rmtree(head / f"out{workers}")
    return best


def row(name: str, size: int, prepare: Measured, train: Measured) -> list[str]:
    start = f"{train.first_update:.1f}" if train.first_update is not None else "n/a"
    gigabytes = [f"{m.peak_rss / 2**30:.2f}" for m in (prepare, train)]
    speed = f"{size / prepare.seconds:,.0f}"
    return [name, f"{size:,}", f"{prepare.seconds / 60:.1f}", speed, gigabytes[0], start, gigabytes[1]]


HEADER = ["pipeline", "pairs", "prepare min", "pairs/s", "prepare peak GB", "train start s", "train peak GB"]


def headlines(results: dict, args: argparse.Namespace) -> None:
    ours = {size: results[("ours", size)] for size in args.sizes}
    sizes = sorted(ours)
    peaks = [ours[s][0].peak_rss for s in sizes]
    spread = max(peaks) / min(peaks)
    print_headline(
        "prepare peak RSS, largest / smallest corpus", "flat", f"{spread:.2f}x", "<= 1.25x (+-25%)"
    )
    largest = sizes[-1]
    prepare, train = ours[largest]
    print_headline(
        f"prepare peak RSS at {largest:,} pairs", "-", f"{prepare.peak_rss / 2**30:.2f} GB", "<= 1.5 GB"
    )
    print_headline(f"prepare time at {largest:,} pairs", "-", f"{prepare.seconds / 60:.1f} min", "<= 5 min")
    print_headline(f"training RSS at {largest:,} pairs", "-", f"{train.peak_rss / 2**30:.2f} GB", "<= 1.2 GB")
    print_headline(
        f"cache-hit start to first update at {largest:,} pairs", "-", f"{train.first_update:.1f} s", "<= 10 s"
    )
    speeds = results["throughput"]
    print(f"encoding stage alone: {speeds[1]:,.0f} pairs/s with 1 worker, {speeds[2]:,.0f} with 2")
    print_headline("encoding throughput, 2 workers", "1 worker", f"{speeds[2] / speeds[1]:.2f}x", ">= 1.6x")
    if len(sizes) > 1:
        growth = (ours[largest][1].peak_rss - ours[sizes[0]][1].peak_rss) / (largest - sizes[0])
        print_headline("training RSS growth per pair", "-", f"{growth:.0f} bytes", "<= 100 bytes")
    for size in args.baseline_sizes:
        previous = results.get((f"previous ({args.baseline_rev})", size))
        if previous and size in ours:
            ratio = previous[0].peak_rss / ours[size][0].peak_rss
            print_headline(
                f"first-run peak RSS at {size:,} pairs",
                f"previous pipeline ({args.baseline_rev})",
                f"{ratio:.1f}x less",
            )
            ratio = previous[1].first_update / ours[size][1].first_update
            print_headline(
                f"cache-hit start at {size:,} pairs",
                f"previous pipeline ({args.baseline_rev})",
                f"{ratio:.1f}x faster",
            )


if __name__ == "__main__":
    main()

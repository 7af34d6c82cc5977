#!/usr/bin/env python
"""Run every benchmark in one go and write their tables, with the machine they ran on, to one Markdown file.

    python benchmarks/run_all.py                    # full runs (about 10-15 minutes on 2 cores)
    python benchmarks/run_all.py --quick            # smoke runs
    python benchmarks/run_all.py --out benchmarks/results.md

Each benchmark measures this project and a peer side by side in the same process and prints ratios,
so the table is meaningful on any machine; the header records which one it was.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import HEADLINE, format_table  # noqa: E402

BENCHMARKS = [
    ("Training step (random-length batch): ours vs MarianMTModel, torch.nn.Transformer", "train_step.py", []),
    (
        "Training step (length-sorted batch): ours vs MarianMTModel, torch.nn.Transformer",
        "train_step.py",
        ["--length-sorted"],
    ),
    ("Decoding: ours vs MarianMTModel.generate", "decode.py", []),
    ("Memory: activation checkpointing; local vs full attention", "memory.py", []),
]
KEPT_SECTION = "## Figures moved from code comments"  # written by hand: kept when the file is rewritten


def kept_section(path: Path) -> list[str]:
    """The hand-written section of an existing results file (from its heading to the end), if any."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return [text[text.index(KEPT_SECTION) :].rstrip() + "\n"] if KEPT_SECTION in text else []


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"Python {platform.python_version()}, load average {load:.2f} at start, "
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    parser.add_argument("--out", type=Path, default=HERE / "results.md", help="Markdown file to write")
    args = parser.parse_args(argv)
    machine_line = machine()  # the load average before the benchmarks add their own
    sections = []
    headlines: list[list[str]] = []
    failed = 0
    for title, script, extra in BENCHMARKS:
        command = [sys.executable, str(HERE / script), *extra, *(["--quick"] if args.quick else [])]
        print(f"== {title}: {' '.join(command[1:])}", flush=True)
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        print(result.stdout, flush=True)
        if result.returncode != 0:
            failed += 1
            print(result.stderr[-3000:], file=sys.stderr)
        headlines += [
            line.removeprefix(HEADLINE).split(" | ")
            for line in result.stdout.splitlines()
            if line.startswith(HEADLINE)
        ]
        body = result.stdout.strip() if result.returncode == 0 else f"failed (exit {result.returncode})"
        sections.append(
            f"## {title}\n\n`python benchmarks/{script}{' --quick' if args.quick else ''}`"
            f" ({seconds:.0f} s)\n\n{body}\n"
        )
    summary = format_table(["measurement", "peer", "ours vs peer", "target"], headlines)
    header = f"# Benchmark results\n\nMachine: {machine_line}\n\n## Summary\n\n{summary}\n"
    print(summary)
    args.out.write_text("\n".join([header, *sections, *kept_section(args.out)]))
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

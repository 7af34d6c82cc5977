"""What the studies of scripts/ share: where the corpus and the runs are, running a stage's command, the
checkpoint a run chose, and sacreBLEU's scores and paired bootstrap, so every study scores the same way."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIBLE = ROOT / "data" / "bible_en_es"
BOOTSTRAP = ("--paired-bs", "--paired-bs-n", "1000")  # sacreBLEU's paired bootstrap, 1000 resamples


def study_directory(name: str, needs: str = "train.en") -> Path:
    """runs/<name>/, made; stops the study when the prepared Bible corpus (its file `needs`) is missing."""
    if not (BIBLE / needs).is_file():
        raise SystemExit(f"{BIBLE} is missing: run `seq2seq-prepare` (or bash scripts/quickstart.sh) first")
    work = ROOT / "runs" / name
    work.mkdir(parents=True, exist_ok=True)
    return work


def run(command: list[str], log: Path | None = None, env: dict[str, str] | None = None) -> None:
    """Run one command of the study; a failure stops the study with the command and where its log is."""
    print("$", shlex.join(command), flush=True)
    environment = {**os.environ, **(env or {})}
    with log.open("a", encoding="utf-8") if log else open(os.devnull, "w") as handle:
        output = handle if log else None
        code = subprocess.run(command, cwd=ROOT, env=environment, stdout=output, stderr=output, check=False)
    if code.returncode:
        raise SystemExit(
            f"the study stopped: {command[0]} exited with {code.returncode}" + (f"; see {log}" if log else "")
        )


def final_checkpoint(run_dir: Path) -> Path:
    """The checkpoint a run chose to translate (summary.json: final), else its last.pt."""
    summary = json.loads((run_dir / "summary.json").read_text())
    chosen = (summary.get("final") or {}).get("checkpoint") or "last.pt"
    return run_dir / Path(chosen).name


def sacrebleu_command(reference: Path, hypotheses: Iterable[Path], *options: str) -> list[str]:
    """sacreBLEU's BLEU and chrF of `hypotheses` against `reference`, with its further `options`."""
    scored = [str(reference), "-i", *map(str, hypotheses), "-m", "bleu", "chrf"]
    return [sys.executable, "-m", "sacrebleu", *scored, *options]


def paired_bootstrap(reference: Path, systems: dict[str, Path]) -> str:
    """sacrebleu's paired bootstrap of every system against the first (the baseline of the test)."""
    # --format text: its json format fails on numpy 2's float32
    command = sacrebleu_command(reference, systems.values(), *BOOTSTRAP, "--format", "text")
    print("$", shlex.join(command), flush=True)
    return subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout

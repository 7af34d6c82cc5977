"""seq2seq commands run as a user runs them: `python -m seq2seq.cli.<name> key=value ...` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toy_corpus import tiny_train_overrides

ENV = {**os.environ, "HYDRA_FULL_ERROR": "0", "OMP_NUM_THREADS": "1"}

# Runs the command named by its second argument with the rest as arguments, killing itself with SIGKILL
# (no handler, no cleanup: as `kill -9` does) as soon as the trainer has saved the update its first names.
KILL_AFTER_SAVE = """
import os, runpy, signal, sys
from seq2seq.train import loop
step = int(sys.argv.pop(1))
save = loop.Trainer._save
def save_then_die(self, **kwargs):
    save(self, **kwargs)
    if self.state.step == step:
        os.kill(os.getpid(), signal.SIGKILL)
loop.Trainer._save = save_then_die
runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
"""

# Every kind of line seq2seq-translate must turn into exactly one output line.
MIXED_LINES = [
    "the man sees the dog",
    "",
    "   \t  ",
    " ".join(["the king loves bread"] * 1250),  # 5,000 words, far over the model's limit
    "the\x07 cat\x1b finds\x00 water",  # control characters
    "the dog 🐕 sees the cat 😺",  # emoji
    "שלום עולם the woman مرحبا",  # right-to-left scripts
    "a woman finds the house",
]


def run_module(module: str, *args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`python -m module args...` with captured output; text when no stdin bytes are given."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=ENV,
        input=stdin,
        capture_output=True,
        text=stdin is None,
        timeout=300,
        check=False,
    )


def train_tiny(corpus: Path, run_dir: Path, *changes: str) -> Path:
    """`run_dir`, a finished seconds-long seq2seq-train run on `corpus` (tiny_train_overrides with `changes`)
    started from run_dir's parent folder."""
    result = run_module(
        "seq2seq.cli.train", *tiny_train_overrides(corpus, run_dir, *changes), cwd=run_dir.parent
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


def error_line(result: subprocess.CompletedProcess) -> str:
    """The one `error:` line of a refused command (exit 2, no traceback)."""
    assert result.returncode == 2, (result.stdout + result.stderr)[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    return errors[0]


def translate(
    run_dir: Path, tmp_path: Path, lines: list[str] | None = None, raw: bytes | None = None, *args: str
) -> tuple[subprocess.CompletedProcess, Path]:
    """seq2seq-translate with run_dir's last.pt over `lines` (or the bytes `raw`) written to a file."""
    source = tmp_path / "input.txt"
    source.write_bytes(raw if raw is not None else "".join(line + "\n" for line in lines).encode())
    output = tmp_path / "output.txt"
    result = run_module(
        "seq2seq.cli.translate",
        f"checkpoint={run_dir / 'last.pt'}",
        f"input={source}",
        f"output={output}",
        "max_input_tokens=64",
        *args,
        cwd=tmp_path,
    )
    return result, output

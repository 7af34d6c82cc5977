"""seq2seq commands run in this process: the command's function on the config Hydra composes from the
overrides a user would type (a subprocess costs a Python start-up each; commands.py runs them as a user
does)."""

from __future__ import annotations

import contextlib
import io
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.translate import translate


def run_command(function: Callable[[Any], Any], name: str, *overrides: str) -> subprocess.CompletedProcess:
    """A command's function (seq2seq.cli.<module>.<function>) on the config Hydra composes from configs/
    `name`.yaml and `overrides` -> its exit code and stderr, as a finished subprocess would give them."""
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose(name, overrides=list(overrides))
    stderr, code = io.StringIO(), 0
    with contextlib.redirect_stderr(stderr):
        try:
            function(cfg)
        except SystemExit as stop:
            code = int(stop.code or 0)
    return subprocess.CompletedProcess([], code, "", stderr.getvalue())


def run_translate(*overrides: str) -> tuple[int, str]:
    """seq2seq-translate's function on the config Hydra composes from `overrides` -> (exit code, stderr)."""
    result = run_command(translate, "translate", *overrides)
    return result.returncode, result.stderr


def translate_lines(
    tmp_path: Path, lines: list[str], checkpoint: str, *overrides: str
) -> tuple[int, str, list[str] | None]:
    """seq2seq-translate's function on `lines` (written to tmp_path/input.txt, the output to
    tmp_path/output.txt) with the setting `checkpoint` ("checkpoint=...") and `overrides` -> (exit code,
    stderr, output lines or None when no output file was written)."""
    source, output = tmp_path / "input.txt", tmp_path / "output.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    code, stderr = run_translate(checkpoint, f"input={source}", f"output={output}", *overrides)
    written = output.read_text(encoding="utf-8").split("\n")[:-1] if output.exists() else None
    return code, stderr, written

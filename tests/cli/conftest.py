"""Shared fixtures for the command-line tests: a toy corpus and one trained toy checkpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from toy_corpus import tiny_train_overrides, write_toy_corpus

ENV = {**os.environ, "HYDRA_FULL_ERROR": "0", "OMP_NUM_THREADS": "1"}


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


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("toy") / "corpus")


@pytest.fixture(scope="session")
def finished_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-update tiny training run; tests that modify it must work on a copy."""
    run_dir = tmp_path_factory.mktemp("run") / "run"
    result = run_module("seq2seq.cli.train", *tiny_train_overrides(corpus, run_dir), cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir

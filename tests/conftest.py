"""Fixtures shared by the test folders: a toy corpus and one trained toy checkpoint.

Test folders have no __init__.py: pytest puts this folder on sys.path, so the helper modules here
(commands.py, toy_corpus.py) import by their own names from any test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from commands import train_tiny
from toy_corpus import write_toy_corpus


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("toy") / "corpus")


@pytest.fixture(scope="session")
def finished_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-update tiny training run; tests that modify it must work on a copy."""
    return train_tiny(corpus, tmp_path_factory.mktemp("run") / "run")


@pytest.fixture
def run_dir(finished_run: Path, tmp_path: Path) -> Path:
    """A copy of the finished run (tmp_path/run) for a test to change, resume or refuse."""
    return Path(shutil.copytree(finished_run, tmp_path / "run"))

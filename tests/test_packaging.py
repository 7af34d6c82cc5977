"""The wheel carries the config tree: every file of configs/ as seq2seq/configs/, and an installed copy
of the package reads that copy, not a checkout's (scripts/check_wheel.sh tests a full install)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from seq2seq.cli.config.launch import config_dir

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
# What setuptools reads to build the wheel; the copy keeps build/ and *.egg-info out of the checkout.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "seq2seq", "configs")


def test_a_source_checkout_reads_its_own_configs() -> None:
    """No packaged copy in the source tree: edits to configs/ apply at once in an editable install."""
    assert not (ROOT / "seq2seq" / "configs").exists(), "seq2seq/configs is a build output; delete it"
    assert Path(config_dir()) == CONFIGS


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(path, source / name)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--wheel-dir", str(work / "dist")]
    result = subprocess.run([*command, str(source)], capture_output=True, text=True)
    assert result.returncode == 0, f"pip wheel failed:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
    (built,) = (work / "dist").glob("seq2seq-*.whl")
    return built


def config_files() -> dict[str, bytes]:
    return {
        path.relative_to(CONFIGS).as_posix(): path.read_bytes()
        for path in CONFIGS.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.mark.slow
def test_the_wheel_carries_every_config_file_unchanged(wheel: Path) -> None:
    prefix = "seq2seq/configs/"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        shipped = {name.removeprefix(prefix): archive.read(name) for name in names if name.startswith(prefix)}
    source = config_files()
    assert "train.yaml" in source and "model/tiny.yaml" in source
    assert sorted(source.keys() - shipped.keys()) == [], "configs/ files missing from the wheel"
    assert sorted(shipped.keys() - source.keys()) == [], "files in the wheel's configs but not in configs/"
    assert [name for name in source if source[name] != shipped[name]] == [], "configs changed in the wheel"
    assert "seq2seq/serve/page.html" in names


@pytest.mark.slow
def test_an_unpacked_wheel_composes_from_its_own_configs(wheel: Path, tmp_path: Path) -> None:
    """The wheel's files on sys.path ahead of any other install: config_dir() is the packaged copy, and a
    Hydra entry point composes an experiment and a nested config group from it."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import seq2seq.cli.config.launch as c; print(c.__file__); print(c.config_dir())"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr[-3000:]
    module, configs = where.stdout.split()
    assert Path(module).is_relative_to(site), f"seq2seq was imported from {module}, not the unpacked wheel"
    assert Path(configs) == (site / "seq2seq" / "configs").resolve()

    experiment = sorted((CONFIGS / "experiment").glob("*.yaml"))[0].stem
    train = subprocess.run(
        [sys.executable, "-m", "seq2seq.cli.train", f"experiment={experiment}", "model=tiny",
         "model/positional=rope", "--cfg", "job"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr[-3000:]
    assert "d_model: 64" in train.stdout

"""Build step of the wheel: the repository's configs/ goes in as the package data seq2seq/configs.

configs/ at the repository root is the one copy people read and edit. An editable install reads it in
place; a wheel carries this copy, which seq2seq.cli.config.launch.config_dir finds through importlib.resources.
Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONFIGS = Path("configs")  # relative to the project root, where setuptools runs this file
PACKAGED = Path("seq2seq", "configs")


def config_files() -> list[Path]:
    """Every file of the config tree (sorted), or an error if the tree is missing (a broken sdist)."""
    if not (CONFIGS / "train.yaml").is_file():
        raise SystemExit(f"error: no {CONFIGS.resolve()}/train.yaml; the wheel needs the configs/ tree")
    return sorted(path for path in CONFIGS.rglob("*") if path.is_file() and "__pycache__" not in path.parts)


class BuildPyWithConfigs(build_py):
    """build_py that also copies configs/ to seq2seq/configs in the build directory (not for editable
    installs: those read the checkout's configs/ directly, so edits there apply at once)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        # A fresh copy: a file deleted from configs/ must not live on in an old build/ directory.
        shutil.rmtree(Path(self.build_lib) / PACKAGED, ignore_errors=True)
        for source, target in self._config_targets():
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return outputs + [str(target) for _, target in self._config_targets()]

    def _config_targets(self) -> list[tuple[Path, Path]]:
        build_dir = Path(self.build_lib) / PACKAGED
        return [(source, build_dir / source.relative_to(CONFIGS)) for source in config_files()]


setup(cmdclass={"build_py": BuildPyWithConfigs})

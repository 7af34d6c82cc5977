"""No entry point imports another: what two commands share lives in a module named for its content, so
that changing one command never changes another by accident (and a command loads only what it runs)."""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def entry_modules() -> set[str]:
    """The modules behind pyproject's scripts (seq2seq.cli.train for "seq2seq.cli.train:main")."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    return {target.split(":", 1)[0] for target in scripts.values()}


def imported_modules(module: str) -> set[str]:
    """Every module `module` imports, at any depth of its code (the names a `from x import y` may take as
    modules included: `from seq2seq.cli import train` imports seq2seq.cli.train)."""
    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_entry_points_are_found() -> None:
    assert {"seq2seq.cli.translate", "seq2seq.cli.serve", "seq2seq.cli.train"} <= entry_modules()


def test_no_entry_point_imports_another() -> None:
    entries = entry_modules()
    crossings = {
        module: sorted((imported_modules(module) & entries) - {module}) for module in sorted(entries)
    }
    assert {module: others for module, others in crossings.items() if others} == {}


def test_cli_holds_the_entry_points_and_their_config_plumbing_only() -> None:
    """seq2seq/cli/ is one module per command; what turns configs into typed settings is in cli/config/,
    and library logic lives in packages a Python caller can use without Hydra."""
    modules = {f"seq2seq.cli.{path.stem}" for path in (ROOT / "seq2seq" / "cli").glob("*.py")}
    assert modules - {"seq2seq.cli.__init__"} == entry_modules()


def test_no_module_below_cli_reads_a_config_object() -> None:
    """Hydra and its config objects are the entry points' business: the package takes typed settings.
    (OmegaConf may read YAML below cli/, as seq2seq.model.sizes reads the named sizes, into plain dicts.)"""
    below = [path for path in (ROOT / "seq2seq").rglob("*.py") if "cli" not in path.relative_to(ROOT).parts]
    config_objects = {"hydra", "omegaconf.DictConfig", "omegaconf.ListConfig"}
    readers = sorted(
        f"{path.relative_to(ROOT)}: {sorted(found)}"
        for path in below
        if (found := {name for name in imported_modules_of(path) if name.split(".")[0] == "hydra"}
            | (imported_modules_of(path) & config_objects))
    )  # fmt: skip
    assert readers == []


def imported_modules_of(path: Path) -> set[str]:
    return imported_modules(".".join(path.relative_to(ROOT).with_suffix("").parts))

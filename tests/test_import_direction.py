"""Imports point one way:
errors/files/checkpoint/precision/metrics -> nn -> model -> data -> decode -> (train | inference) -> qe
-> export -> serve -> cli. train and inference share a rank: neither imports the other (what both need,
such as a model's tuned decoding, lives in decode below them).

Every `import seq2seq...` in the package (function-level ones included) is read from the source with
`ast`, so a lazy import that breaks the order is caught as well as a top-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seq2seq"
LAYERS = ["errors", "files", "checkpoint", "precision", "metrics", "nn", "model", "data", "decode",
          "train", "inference", "qe", "export", "interop", "serve", "cli"]  # fmt: skip
SIDE_BY_SIDE = {"train": "inference", "inference": "train"}  # one rank: neither may import the other


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """seq2seq modules the file imports (`from seq2seq.x import y`: x, or x.y where y is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("seq2seq"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("seq2seq"):
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            submodules = {
                m for m in submodules if (PACKAGE.parent / Path(*m.split("."))).with_suffix(".py").exists()
            }
            # `from package import module` runs the package's __init__ first, like any import below it.
            found.update(submodules if len(submodules) == len(node.names) else {node.module, *submodules})
    return found


def top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def layer(module: str) -> int | None:
    """The rank of seq2seq.<top>...; None for the package root (its facade may re-export anything)."""
    name = top(module)
    if name is None:
        return None
    return LAYERS.index("train") if name == "inference" else LAYERS.index(name)


GRAPH = {module_name(p): imported_modules(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_package_has_a_layer() -> None:
    tops = {name.split(".")[1] for name in GRAPH if "." in name}
    assert tops <= set(LAYERS), f"add {sorted(tops - set(LAYERS))} to LAYERS in the right place"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if layer(m) is not None))
def test_imports_point_down_or_sideways(module: str) -> None:
    upward = sorted(dep for dep in GRAPH[module] if layer(dep) is not None and layer(dep) > layer(module))
    assert not upward, f"{module} imports {upward}, which sit above it in {LAYERS}"
    sideways = sorted(dep for dep in GRAPH[module] if top(dep) == SIDE_BY_SIDE.get(top(module) or ""))
    assert not sideways, f"{module} imports {sideways}: train and inference must not import each other"


def test_no_import_cycles() -> None:
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(GRAPH.get(module, ())):
            if dep == module or dep not in GRAPH or layer(dep) is None:
                continue
            if state.get(dep) == "open":
                cycle = path[path.index(dep) :] + [dep] if dep in path else [module, dep]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if dep not in state:
                visit(dep, [*path, dep])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_the_checker_sees_a_violation() -> None:
    """The rule is not vacuous: an import of train from decode would be reported, and one between train
    and inference."""
    assert layer("seq2seq.train.loop") > layer("seq2seq.decode.beam")
    assert SIDE_BY_SIDE[top("seq2seq.inference.translator")] == top("seq2seq.train.loop")
    assert "seq2seq.checkpoint" in GRAPH["seq2seq.inference.loading"]

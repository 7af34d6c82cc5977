"""Imports point one way:
errors/files/checkpoint/precision/devices/metrics/attention_pictures -> nn -> model -> data -> decode
-> (train | inference) -> qe -> corpus_translation -> export -> interop -> serve -> cli. train and
inference share a rank: neither imports the other (what both need, such as a model's tuned decoding,
lives in decode below them).

Every `import seq2seq...` in the package (function-level ones included) is read from the source with
`ast`, so a lazy import that breaks the order is caught as well as a top-level one.

Besides the ranks, the rules DESIGN.md states for single packages: export and serve reach inference only
through its public surface (seq2seq.inference.api) and the model package's public names; search code
(seq2seq.decode) names no model family and draws no pictures; no module below cli sees a DictConfig.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seq2seq"
LAYERS = ["errors", "files", "checkpoint", "precision", "devices", "metrics", "attention_pictures", "nn",
          "model", "data", "decode", "train", "inference", "qe", "corpus_translation", "export", "interop",
          "serve", "cli"]  # fmt: skip
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


# ------------------------------------------------------------------ rules of single packages

# What export and serve may import: the public inference surface, the model package's own names (not its
# modules), the layers below that have no private parts, Hugging Face interop, and their own package.
PUBLIC_SURFACE = {"seq2seq", "seq2seq.inference.api", "seq2seq.model", "seq2seq.checkpoint", "seq2seq.errors",
                  "seq2seq.files"}  # fmt: skip
PUBLIC_PACKAGES = ("seq2seq.interop",)
FAMILY_CLASSES = {"Seq2Seq", "DecoderOnly", "EncoderOnly"}
FAMILY_MODULES = {f"seq2seq.model.{name}" for name in ("transformer", "decoder_only", "encoder_only")}


def package_files(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


def private_imports(package: str, imports: set[str]) -> list[str]:
    """The seq2seq modules in `imports` that a module of `package` (export, serve) may not import."""
    own = (f"seq2seq.{package}", *PUBLIC_PACKAGES)
    return sorted(
        name for name in imports
        if name not in PUBLIC_SURFACE and not any(name == p or name.startswith(p + ".") for p in own)
    )  # fmt: skip


def nodes(source: str) -> list[ast.AST]:
    return list(ast.walk(ast.parse(source)))


def imported_names(source: str) -> set[str]:
    """Every module a source imports (any package) and every name it imports from one."""
    found: set[str] = set()
    for node in nodes(source):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(alias.name for alias in node.names)
    return found


def family_names(source: str) -> list[str]:
    """The model family classes and modules a source names in code (docstrings and comments aside)."""
    used = {node.id for node in nodes(source) if isinstance(node, ast.Name)}
    used |= {node.attr for node in nodes(source) if isinstance(node, ast.Attribute)}
    return sorted((used | imported_names(source)) & (FAMILY_CLASSES | FAMILY_MODULES))


def draws_pictures(source: str) -> bool:
    return any(name == "matplotlib" or name.startswith("matplotlib.") for name in imported_names(source))


def sees_dict_config(source: str) -> bool:
    """Whether a source imports omegaconf's DictConfig, or reaches it as omegaconf.DictConfig."""
    attributes = {node.attr for node in nodes(source) if isinstance(node, ast.Attribute)}
    return "DictConfig" in imported_names(source) or "DictConfig" in attributes


@pytest.mark.parametrize("package", ["export", "serve"])
def test_export_and_serve_use_only_the_public_inference_surface(package: str) -> None:
    found = {
        str(path.relative_to(PACKAGE.parent)): private_imports(package, GRAPH[module_name(path)])
        for path in package_files(package)
    }
    found = {path: names for path, names in found.items() if names}
    assert not found, f"import these through seq2seq.inference.api or the seq2seq.model package: {found}"


def test_search_code_names_no_model_family_and_draws_no_pictures() -> None:
    for path in package_files("decode"):
        source = path.read_text(encoding="utf-8")
        assert not family_names(source), f"{path.name} names {family_names(source)}: use SearchableModel"
        assert not draws_pictures(source), f"{path.name} imports matplotlib: pictures live outside search"


def test_no_module_below_cli_sees_a_dict_config() -> None:
    found = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "cli" and sees_dict_config(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"{found} import DictConfig: the CLI reads configs and passes plain values"


def test_the_package_rules_see_a_violation() -> None:
    """Each rule reports what it forbids, lazy imports included, and lets the allowed through."""
    assert private_imports("export", {"seq2seq.decode.shortlist", "seq2seq.inference.loading"}) == [
        "seq2seq.decode.shortlist", "seq2seq.inference.loading"
    ]  # fmt: skip
    allowed = {"seq2seq.inference.api", "seq2seq.model", "seq2seq.interop.huggingface_export"}
    assert private_imports("export", allowed | {"seq2seq.export.ctranslate2"}) == []
    assert private_imports("export", {"seq2seq.model.transformer", "seq2seq.nn.positional"}) == [
        "seq2seq.model.transformer", "seq2seq.nn.positional"
    ]  # fmt: skip
    assert family_names("def f(m):\n    from seq2seq.model import Seq2Seq\n") == ["Seq2Seq"]
    assert family_names("import seq2seq.model.decoder_only\nx = isinstance(m, model.EncoderOnly)") == [
        "EncoderOnly", "seq2seq.model.decoder_only"
    ]  # fmt: skip
    assert family_names('"""Seq2Seq and DecoderOnly, in words."""\n') == []
    assert draws_pictures("def f():\n    import matplotlib.pyplot as plt\n")
    assert sees_dict_config("from omegaconf import DictConfig, OmegaConf\n")
    assert sees_dict_config("import omegaconf\ndef f(c: omegaconf.DictConfig): ...\n")
    assert not sees_dict_config("from omegaconf import OmegaConf\n")

"""Every test that starts another process carries `@pytest.mark.slow`, so that the quick loop
(`pytest -m "not slow" -n 2`, docs/contributing.md) stays quick.

Starting a process means calling, directly or through the test helpers, fixtures and classes of tests/,
one of PROCESS_STARTERS: a subprocess (the CLI run as a user runs it, torchrun, a wheel build, a server
process), ranks spawned by torch.multiprocessing, or uvicorn. FastAPI's in-process TestClient is not a
process. The test files are read with `ast`, so a new test cannot slip in unmarked: a test starts a
process when its body, a fixture it takes (from its module or a conftest.py above it) or a helper it
calls reaches a starter. (Tests may be marked slow for their running time alone, too.)
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Dotted names (as written after resolving `import x as y`) whose call starts another process.
PROCESS_STARTERS = {
    "subprocess.run", "subprocess.Popen", "subprocess.call", "subprocess.check_call",
    "subprocess.check_output", "os.system", "os.fork", "os.spawnv", "os.execv", "uvicorn.run",
    "uvicorn.Server", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
    "multiprocessing.Process", "multiprocessing.Pool", "concurrent.futures.ProcessPoolExecutor",
    "torch.multiprocessing.spawn", "torch.multiprocessing.start_processes", "torch.multiprocessing.Process",
}  # fmt: skip


@dataclass(eq=False)
class Module:
    """One test file or helper module: its functions and classes, and where its imported names come from."""

    path: Path
    tree: ast.Module
    defs: dict[str, ast.AST] = field(default_factory=dict)  # top-level functions and classes
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted origin

    @classmethod
    def read(cls, path: Path) -> Module:
        module = cls(path, ast.parse(path.read_text(encoding="utf-8")))
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                module.defs[node.name] = node
            elif isinstance(node, ast.Import):
                module.imports.update({a.asname or a.name.split(".")[0]: a.name if a.asname else
                                       a.name.split(".")[0] for a in node.names})  # fmt: skip
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                module.imports.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        return module


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` of a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


class Scanner:
    """Which functions, classes and fixtures of tests/ reach a process starter."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = {path: Module.read(path) for path in sorted(root.rglob("*.py"))}
        self.by_name = {path.stem: module for path, module in self.modules.items()}  # helpers import by stem
        self.memo: dict[tuple[Path, str], bool] = {}

    def resolve(self, module: Module, name: str) -> tuple[Module, str] | str:
        """The definition in tests/ a called name refers to, or its dotted origin outside tests/."""
        head, _, rest = name.partition(".")
        if head in module.defs and not rest:
            return module, head
        origin = module.imports.get(head)
        full = f"{origin}.{rest}" if origin and rest else (origin or name)
        helper, _, attribute = full.rpartition(".")
        if helper in self.by_name and attribute in self.by_name[helper].defs:
            return self.by_name[helper], attribute
        return full

    def starts(self, module: Module, name: str) -> bool:
        """Whether the top-level function or class `name` of `module` reaches a process starter."""
        key = (module.path, name)
        if key not in self.memo:
            self.memo[key] = False  # a recursive helper does not loop
            self.memo[key] = self.body_starts(module, module.defs[name])
        return self.memo[key]

    def body_starts(self, module: Module, node: ast.AST) -> bool:
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            name = dotted(call.func)
            target = None if name is None else self.resolve(module, name)
            if isinstance(target, str) and target in PROCESS_STARTERS:
                return True
            if isinstance(target, tuple) and self.starts(*target):
                return True
        return False

    @functools.cache  # noqa: B019 - one Scanner per scan
    def fixtures_for(self, module: Module) -> dict[str, tuple[Module, ast.FunctionDef]]:
        """The fixtures a test of `module` can take: conftest.py files from the root down, then its own."""
        found: dict[str, tuple[Module, ast.FunctionDef]] = {}
        folders = [module.path.parent, *module.path.parent.parents]
        conftests = [
            folder / "conftest.py" for folder in reversed(folders) if folder.is_relative_to(self.root)
        ]
        for source in [self.modules[c] for c in conftests if c in self.modules] + [module]:
            for name, node in source.defs.items():
                if isinstance(node, ast.FunctionDef) and any(
                    "fixture" in ast.unparse(d) for d in node.decorator_list
                ):
                    found[name] = (source, node)
        return found

    def test_starts(self, module: Module, test: ast.FunctionDef, seen: frozenset[str] = frozenset()) -> bool:
        """The test (or fixture) body, or a fixture it takes, reaches a process starter."""
        if self.body_starts(module, test):
            return True
        fixtures = self.fixtures_for(module)
        wanted = [a.arg for a in test.args.args] + usefixtures(test)
        for name in (n for n in wanted if n in fixtures and n not in seen):
            source, node = fixtures[name]
            if self.test_starts(source, node, seen | {name}):
                return True
        return False


def usefixtures(node: ast.FunctionDef | ast.ClassDef) -> list[str]:
    return [arg.value for d in node.decorator_list if isinstance(d, ast.Call)
            and (dotted(d.func) or "").endswith("mark.usefixtures")
            for arg in d.args if isinstance(arg, ast.Constant)]  # fmt: skip


def is_slow(node: ast.AST) -> bool:
    """A `pytest.mark.slow` among the decorators (or in a `pytestmark` value)."""
    return "mark.slow" in ast.unparse(node)


def module_tests(module: Module) -> Iterator[tuple[str, ast.FunctionDef, bool]]:
    """(name, test function, marked slow by its class or module) of each test in `module`."""
    module_slow = any(isinstance(n, ast.Assign) and any(dotted(t) == "pytestmark" for t in n.targets)
                      and is_slow(n.value) for n in module.tree.body)  # fmt: skip
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield node.name, node, module_slow
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            class_slow = module_slow or any(is_slow(d) for d in node.decorator_list)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    yield f"{node.name}.{item.name}", item, class_slow


def unmarked_process_tests(root: Path) -> list[str]:
    """`path::test` of each test under `root` that starts a process and is not marked slow."""
    scanner = Scanner(root)
    found = []
    for path, module in scanner.modules.items():
        if not path.name.startswith("test_"):
            continue
        for name, test, inherited in module_tests(module):
            marked = inherited or any(is_slow(d) for d in test.decorator_list)
            if not marked and scanner.test_starts(module, test):
                found.append(f"{path.relative_to(root).as_posix()}::{name}")
    return found


def test_every_test_that_starts_a_process_is_marked_slow() -> None:
    unmarked = unmarked_process_tests(TESTS)
    assert not unmarked, (
        "these tests start another process (a CLI run, a server, torchrun, a build) but lack "
        "@pytest.mark.slow:\n  " + "\n  ".join(unmarked)
    )


EXAMPLE = {
    "helpers.py": "import subprocess\n\ndef run_cli(*args):\n    return subprocess.run(args)\n",
    "conftest.py": (
        "import pytest\nfrom helpers import run_cli\n\n@pytest.fixture\ndef trained():\n"
        "    run_cli('train')\n"
    ),
    "test_example.py": """
import subprocess as sp
import pytest
import torch.multiprocessing as mp
from helpers import run_cli

class Client:
    def __init__(self):
        self.process = sp.Popen(["serve"])

def test_direct():
    sp.run(["x"])

def test_through_a_helper():
    run_cli("x")

def test_through_a_fixture(trained):
    pass

def test_through_a_class():
    Client()

def test_ranks():
    mp.spawn(print, nprocs=2)

@pytest.mark.slow
def test_marked():
    run_cli("x")

def test_in_process():
    assert sorted([2, 1]) == [1, 2]
""",
}


def test_the_scan_finds_direct_helper_fixture_and_class_starts(tmp_path: Path) -> None:
    for name, text in EXAMPLE.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert unmarked_process_tests(tmp_path) == [
        f"test_example.py::{name}"
        for name in (
            "test_direct",
            "test_through_a_helper",
            "test_through_a_fixture",
            "test_through_a_class",
            "test_ranks",
        )
    ]
    (tmp_path / "test_marked_module.py").write_text(
        "import pytest\nfrom helpers import run_cli\npytestmark = [pytest.mark.slow]\n\n"
        "def test_any():\n    run_cli()\n",
        encoding="utf-8",
    )
    assert "test_marked_module.py::test_any" not in unmarked_process_tests(tmp_path)


@pytest.mark.parametrize("marker", ["slow"])
def test_the_slow_marker_is_registered(marker: str, pytestconfig: pytest.Config) -> None:
    assert any(line.split(":")[0].strip() == marker for line in pytestconfig.getini("markers"))

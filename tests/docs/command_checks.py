"""What can be checked of a shown command without running it, in this process.

A command line is split as bash splits it (quotes, `|`, `&&`, `;`, redirections, leading `VAR=value`
assignments) into simple commands, and each is checked by its program:

    seq2seq-* (Hydra), torchrun -m seq2seq.cli.*, python -m seq2seq.cli.*
                     the overrides go through Hydra's override parser (a lexer error fails) and are
                     composed with the command's config (the `config_name` of its @hydra.main) against
                     the project's configs/, so an unknown key or config fails; a multirun (`-m`)
                     composes the first value of each swept key. `--config-dir DIR` adds DIR (see
                     `config_dirs`) to the search path; `--help`, `--cfg job` compose the same config.
    seq2seq-score, seq2seq-average (argparse)
                     the arguments parse.
    python scripts/X.py, python benchmarks/X.py, bash X.sh, X.sh
                     the file exists.
    python -c CODE   CODE compiles.
    pip install      each extra exists in pyproject.toml; a pinned package is pinned the same in .ci/run;
                     a named package is installed here.
    sacrebleu -t T -l L
                     sacreBLEU knows test set T and its language pair L.
    anything else    the program exists (in the environment's bin/ or on PATH).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import io
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from doc_commands import REPOSITORY, declared_extras

SEPARATORS = ("|", "||", "&&", ";", "&")
REDIRECTIONS = (">", ">>", "<", "2>", "&>")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
HYDRA_FLAGS_WITH_VALUE = {"--cfg", "-c", "--config-dir", "-cd", "--config-name", "-cn", "--package", "-p"}
HYDRA_FLAGS = {"-m", "--multirun", "--help", "-h", "--hydra-help", "--info", "--resolve"}


def words(command: str) -> list[str]:
    """The command's words as bash splits them, with `|`, `&&`, `;` and redirections as words of their own."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def simple_commands(command: str) -> list[list[str]]:
    """The simple commands of a line: split at `|`, `&&`, `||`, `;`, without redirections and without the
    leading `VAR=value` assignments."""
    found: list[list[str]] = [[]]
    tokens = iter(words(command))
    for token in tokens:
        if token in SEPARATORS:
            found.append([])
        elif token in REDIRECTIONS:
            next(tokens, None)
        else:
            found[-1].append(token)
    for simple in found:
        while simple and ASSIGNMENT.match(simple[0]) and len(simple) > 1:
            simple.pop(0)
    return [simple for simple in found if simple]


def cli_modules() -> dict[str, str]:
    """seq2seq-* command -> its module, from pyproject.toml's [project.scripts]."""
    scripts = _pyproject()["project"]["scripts"]
    return {name: target.split(":")[0] for name, target in scripts.items()}


def config_name(module: str) -> str | None:
    """The config a command module's main composes (`command_main(..., config_name=)`, or its own
    @hydra.main); None for an argparse command."""
    source = (REPOSITORY / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    found = re.search(r"(?:@hydra\.main\(|command_main\().*config_name=\"(\w+)\"", source)
    return found.group(1) if found else None


def problems(command: str, config_dirs: dict[str, Path] | None = None) -> list[str]:
    """What is wrong with the command, as far as can be told without running it ([] when nothing)."""
    found = []
    for simple in simple_commands(command):
        try:
            problem = check_simple(simple, config_dirs or {})
        except Exception as error:
            problem = f"{type(error).__name__}: {error}"
        if problem:
            found.append(f"{shlex.join(simple)}: {problem}")
    return found


def check_simple(simple: list[str], config_dirs: dict[str, Path]) -> str | None:
    program, *args = simple
    program = program.removeprefix(".venv/bin/")
    modules = cli_modules()
    if program in modules:
        return check_cli(modules[program], args, config_dirs)
    if program in ("python", "python3") and args[:1] == ["-m"] and len(args) > 1:
        if args[1].startswith("seq2seq.cli."):
            return check_cli(args[1], args[2:], config_dirs)
        return _module_exists(args[1])
    if program == "torchrun":
        return check_cli(*_torchrun_module(args), config_dirs)
    if program in ("python", "python3") and args[:1] == ["-c"]:
        compile(args[1], "<python -c>", "exec")
        return None
    if program in ("python", "python3", "bash") and args and args[0].endswith((".py", ".sh")):
        return None if (REPOSITORY / args[0]).is_file() else f"{args[0]} does not exist"
    if program.endswith(".sh"):
        return None if (REPOSITORY / program).is_file() else f"{program} does not exist"
    if program == "pip":
        return check_pip(args)
    if program == "sacrebleu" and "-t" in args:
        return check_sacrebleu(args)
    return None if _program_exists(program) else f"no program {program} in the environment or on PATH"


def check_cli(module: str, args: list[str], config_dirs: dict[str, Path]) -> str | None:
    """A seq2seq command's arguments: composed by Hydra, or parsed by its argparse parser."""
    imported = importlib.import_module(module)  # registers the structured configs its config uses
    name = config_name(module)
    if name is None:
        return _parse_arguments(imported, args)
    overrides, multirun, searchpath = [], False, []
    arguments = iter(args)
    for arg in arguments:
        if arg in HYDRA_FLAGS_WITH_VALUE:
            value = next(arguments, "")
            if arg in ("--config-dir", "-cd"):
                if value not in config_dirs:
                    return f"--config-dir {value}: no such directory among {sorted(config_dirs)}"
                searchpath.append(f"file://{config_dirs[value]}")
            elif arg in ("--config-name", "-cn"):
                name = value
        elif arg in HYDRA_FLAGS:
            multirun = multirun or arg in ("-m", "--multirun")
        elif arg.startswith("-"):
            return f"{arg}: not an option of a Hydra command"
        else:
            overrides.append(arg)
    return compose_overrides(name, overrides, multirun=multirun, searchpath=searchpath)


def compose_overrides(name: str, overrides: list[str], *, multirun: bool, searchpath: list[str]) -> None:
    """Hydra's parse of `overrides` and the config `name` composed with them (the first value of a swept
    key in a multirun); raises what Hydra raises."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from seq2seq.cli.config.launch import config_dir

    parsed = OverridesParser.create().parse_overrides(overrides)
    concrete = []
    for override in parsed:
        if multirun and override.is_sweep_override():
            concrete.append(f"{override.get_key_element()}={next(override.sweep_string_iterator())}")
        else:
            concrete.append(override.input_line)
    if searchpath:
        concrete.append(f"hydra.searchpath=[{','.join(searchpath)}]")
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        compose(name, overrides=concrete, return_hydra_config=True)
    return None


def _parse_arguments(module: object, args: list[str]) -> str | None:
    parser = module.build_parser()  # type: ignore[attr-defined]
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as stop:
        return None if stop.code == 0 else errors.getvalue().strip().splitlines()[-1]
    return None


def _torchrun_module(args: list[str]) -> tuple[str, list[str]]:
    """The module torchrun runs (`-m seq2seq.cli.X`) and its arguments."""
    if "-m" not in args:
        raise ValueError("torchrun without -m MODULE")
    at = args.index("-m")
    bad = [a for a in args[:at] if not re.fullmatch(r"--[a-z_]+=\S+", a)]
    if bad:
        raise ValueError(f"torchrun options not written --name=value: {bad}")
    return args[at + 1], args[at + 2 :]


def check_pip(args: list[str]) -> str | None:
    if args[:1] != ["install"]:
        return f"pip {' '.join(args)}: only `pip install` is expected"
    pins = dict(
        re.findall(r"\b([\w-]+)==([\w.+-]+)", (REPOSITORY / ".ci" / "run").read_text(encoding="utf-8"))
    )
    for arg in args[1:]:
        extras = re.fullmatch(r"\.\[([\w,-]+)\]", arg)
        if arg in ("-e", "-q", "."):
            continue
        if extras:
            missing = [name for name in extras.group(1).split(",") if name not in declared_extras()]
            if missing:
                return f"pyproject.toml has no extra {missing}"
        elif "==" in arg:
            name, version = arg.split("==")
            if pins.get(name) != version:
                return f"{arg}: .ci/run pins {name}=={pins.get(name)}"
        else:
            try:
                importlib.metadata.version(arg)
            except importlib.metadata.PackageNotFoundError:
                return f"{arg} is not installed in this environment"
    return None


def check_sacrebleu(args: list[str]) -> str | None:
    from sacrebleu.dataset import DATASETS

    test_set, pair = args[args.index("-t") + 1], args[args.index("-l") + 1]
    if test_set not in DATASETS:
        return f"sacreBLEU has no test set {test_set}"
    if pair not in DATASETS[test_set].langpairs:
        return f"sacreBLEU's {test_set} has no language pair {pair}"
    return None


def _module_exists(module: str) -> str | None:
    return None if importlib.util.find_spec(module) else f"no module {module}"


def _program_exists(program: str) -> bool:
    if program in ("source", "export", "cd", "echo", "printf"):
        return True
    path = os.pathsep.join([str(Path(sys.prefix) / "bin"), os.environ.get("PATH", "")])
    return shutil.which(program, path=path) is not None


def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))

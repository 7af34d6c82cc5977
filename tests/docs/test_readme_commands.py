"""Every command that README.md shows runs as written.

Which commands are checked
    Every line of every fenced code block in README.md whose info string is `bash` (a trailing
    backslash continues a line, `#` starts a comment). Blocks of any other kind (`text`: a listing)
    hold no commands. Inline code spans that are commands with arguments (they start with `bash `,
    `seq2seq-`, `pip `, `python`, `mkdocs`, `curl `, `source ` or `.venv/` and hold a space) must
    repeat a command of a checked block, except `bash .ci/run` (see below); a bare name such as
    `seq2seq-train` is a name, not a command. A command that no rule below matches fails
    `test_every_readme_command_has_a_rule`, so a new command in README needs a decision here.

Where they run
    In README order, each in its own `bash -c`, in a temporary directory that stands for the project
    directory after the quickstart: `.venv` there links to the environment running these tests, PATH
    starts with its bin/ (what `source .venv/bin/activate` does), and a 300-pair toy corpus
    (tests/cli/toy_corpus.py) lies where the quickstart puts the Bible corpus,
    data/bible_en_es/{train,dev,test}.{en,es}. The mkdocs commands run in the repository itself,
    where mkdocs.yml is.

How each command is checked (RULES below)
    run as written        seq2seq-translate, seq2seq-score, seq2seq-export, curl, `source .venv/bin/activate`
                          (then `command -v seq2seq-train` must find the venv's)
    shortened             seq2seq-train runs as written with TRAIN_OVERRIDES appended, which make it a
                          4-update run of the tiny model (Hydra keeps the last value of a key: the
                          budget stays as written, max_updates stops it first); a sweep (`-m`) also
                          gets SWEEP_OVERRIDES: one trial, the model shape fixed (keys given on the
                          command line leave the search)
    another port          seq2seq-serve runs as written but on a free port instead of 8080 (also in
                          the curl lines), in the background until /health answers; the curl lines run
                          against it; SIGTERM must then stop it with status 0
    not run               `bash scripts/quickstart.sh`: 30 minutes on the Bible corpus. .ci/run runs it
                          before the suite with MINUTES=2 and a tiny model (its smoke run); here
                          `bash -n` checks that it parses.
                          `.venv/bin/python -m pytest -q -n 2`: this suite. It must be the command .ci/run
                          ends with (`bash .ci/run`, shown inline, is checked the same way).
                          `pip install -e '.[extras]'`: the environment already has what .ci/run
                          installs; every extra named must exist in pyproject.toml.
                          `mkdocs serve`: a server; `mkdocs serve --help` only.
    redirected            `mkdocs build --strict` runs with `--site-dir` in the temporary directory.

Budget: about a minute of CPU on one thread (OMP_NUM_THREADS=1).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
from toy_corpus import tiny_train_overrides, write_toy_corpus  # noqa: E402  (tests/ is on sys.path: tests/conftest.py)

# The toy corpus stands where README's commands expect the Bible corpus: the tiny run's overrides
# without its data location keys.
TRAIN_OVERRIDES = [
    override
    for override in tiny_train_overrides(Path("unused"), None)
    if override.split("=", 1)[0] not in ("data", "data.dir", "data.src_lang", "data.tgt_lang")
]
SWEEP_OVERRIDES = [
    "hydra.sweeper.n_trials=1",
    "model.d_model=64",
    "model.ffn_dim=128",
    "model.encoder_layers=1",
    "model.decoder_layers=1",
]
COMMAND_LIKE = ("bash ", "seq2seq-", "pip ", "python", "mkdocs", "curl ", "source ", ".venv/")
CI_COMMAND = "bash .ci/run"
TIMEOUT = 300


@dataclass
class Command:
    text: str  # as README shows it, comment removed
    line: int  # where it starts in README.md


def strip_comment(line: str) -> str:
    """The line without its `# comment` (a `#` outside quotes, at the start or after a space)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line.rstrip()


def readme_commands(text: str) -> list[Command]:
    """The commands of README's `bash` blocks, in order."""
    commands: list[Command] = []
    lines = text.splitlines()
    inside = False
    pending: list[str] = []
    start = 0
    for number, line in enumerate(lines, start=1):
        fence = line.strip().startswith("```")
        if fence:
            inside = not inside and line.strip() == "```bash"
            continue
        if not inside:
            continue
        code = strip_comment(line)
        if not pending:
            start = number
        if code.endswith("\\"):
            pending.append(code[:-1].strip())
            continue
        pending.append(code.strip())
        joined = " ".join(part for part in pending if part)
        pending = []
        if joined:
            commands.append(Command(joined, start))
    return commands


def inline_commands(text: str) -> list[str]:
    """Inline code spans outside code blocks that start like a command."""
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = re.findall(r"`([^`\n]+)`", outside)
    return [span for span in spans if span.startswith(COMMAND_LIKE) and " " in span.strip()]


def ci_test_command() -> str:
    """The pytest line .ci/run ends with, with its $VENV default substituted."""
    script = (REPOSITORY / ".ci" / "run").read_text(encoding="utf-8")
    default = re.search(r"VENV=\$\{VENV:-([^}]+)\}", script)
    lines = [line.strip() for line in script.splitlines() if re.search(r"-m pytest\b", line)]
    assert lines, ".ci/run runs no pytest"
    venv = default.group(1) if default else ".venv"
    return lines[-1].replace('"$VENV', venv).replace("$VENV", venv).replace('python"', "python")


# ------------------------------------------------------------------------------------------- rules


class Session:
    """The temporary project directory and what runs in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.server: subprocess.Popen | None = None
        self.port = free_port()
        venv = Path(sys.prefix)
        (root / ".venv").symlink_to(venv, target_is_directory=True)
        write_toy_corpus(root / "data" / "bible_en_es")
        self.env = {
            **os.environ,
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
            "OMP_NUM_THREADS": "1",
            "HYDRA_FULL_ERROR": "0",
        }

    def bash(self, command: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert result.returncode == 0, f"`{command}` exited {result.returncode}:\n{result.stderr[-3000:]}"
        return result

    def with_port(self, command: str) -> str:
        return command.replace("8080", str(self.port))

    def stop_server(self) -> None:
        if self.server is None:
            return
        server, self.server = self.server, None
        server.send_signal(signal.SIGTERM)
        try:
            _, err = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
        assert server.returncode == 0, f"seq2seq-serve exited {server.returncode} on SIGTERM:\n{err[-3000:]}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def activate(session: Session, command: str) -> None:
    found = session.bash(f"{command} && command -v seq2seq-train").stdout.strip()
    assert Path(found).parent.resolve() == (session.root / ".venv" / "bin").resolve(), found


def quickstart(session: Session, command: str) -> None:
    assert command == "bash scripts/quickstart.sh"
    session.bash("bash -n scripts/quickstart.sh", cwd=REPOSITORY)


def suite_command(session: Session, command: str) -> None:
    assert command == ci_test_command(), (
        f"README's test command is not the one .ci/run runs ({ci_test_command()})"
    )


def pip_extras(session: Session, command: str) -> None:
    extras = re.fullmatch(r"pip install -e '\.\[([\w,-]+)\]'", command)
    assert extras, f"unexpected pip command: {command}"
    declared = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    missing = [name for name in extras.group(1).split(",") if name not in declared]
    assert not missing, f"pyproject.toml has no extra {missing}"


def train(session: Session, command: str) -> None:
    extra = TRAIN_OVERRIDES
    if " -m " in f"{command} ":  # a sweep: the shape instead of model=tiny; threads from the launcher
        extra = [o for o in TRAIN_OVERRIDES if o.split("=")[0] not in ("model", "trainer.num_threads")]
        extra += SWEEP_OVERRIDES
    session.bash(f"{command} {shlex.join(extra)}")


def as_written(session: Session, command: str) -> None:
    session.bash(command)


def serve(session: Session, command: str) -> None:
    session.stop_server()
    server = subprocess.Popen(
        ["bash", "-c", f"exec {session.with_port(command)}"],
        cwd=session.root,
        env=session.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    session.server = server
    deadline = time.monotonic() + 120
    while True:
        if server.poll() is not None:
            _, err = server.communicate()
            session.server = None
            pytest.fail(f"`{command}` exited {server.returncode}:\n{err[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{session.port}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, "seq2seq-serve did not answer /health within 120 s"
        time.sleep(0.5)


def curl(session: Session, command: str) -> None:
    assert session.server is not None, "a curl line needs the seq2seq-serve line before it"
    answer = json.loads(session.bash(session.with_port(command)).stdout)
    assert isinstance(answer.get("translations"), list), answer


def mkdocs_serve(session: Session, command: str) -> None:
    session.bash(f"{command} --help", cwd=REPOSITORY)


def mkdocs_build(session: Session, command: str) -> None:
    session.bash(f"{command} --site-dir {shlex.quote(str(session.root / 'site'))}", cwd=REPOSITORY)
    assert (session.root / "site" / "index.html").is_file()


RULES: list[tuple[str, Callable[[Session, str], None]]] = [
    (r"source \.venv/bin/activate", activate),
    (r"bash scripts/quickstart\.sh", quickstart),
    (r"\.venv/bin/python -m pytest\b.*", suite_command),
    (r"pip install .*", pip_extras),
    (r"seq2seq-train\b.*", train),
    (r"seq2seq-(translate|score|export)\b.*", as_written),
    (r"seq2seq-serve\b.*", serve),
    (r"curl .*", curl),
    (r"mkdocs serve\b.*", mkdocs_serve),
    (r"mkdocs build\b.*", mkdocs_build),
]


def rule_for(command: str) -> Callable[[Session, str], None] | None:
    for pattern, handler in RULES:
        if re.fullmatch(pattern, command):
            return handler
    return None


# ------------------------------------------------------------------------------------------- tests


def test_every_readme_command_has_a_rule() -> None:
    text = README.read_text(encoding="utf-8")
    commands = readme_commands(text)
    assert commands, "README.md shows no bash block"
    unknown = [f"README.md:{c.line}: {c.text}" for c in commands if rule_for(c.text) is None]
    assert not unknown, "commands without a rule in this test:\n" + "\n".join(unknown)
    shown = {c.text for c in commands}
    stray = [span for span in inline_commands(text) if span not in shown and span != CI_COMMAND]
    assert not stray, f"inline commands that no checked block shows: {stray}"


def test_the_two_commands_open_the_readme() -> None:
    first_two = [c.text for c in readme_commands(README.read_text(encoding="utf-8"))[:2]]
    assert first_two == ["bash scripts/quickstart.sh", ci_test_command()]
    assert (REPOSITORY / ".ci" / "run").is_file()


def test_the_readme_links_exist() -> None:
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (REPOSITORY / target).exists(), f"README links to a missing file: {target}"


@pytest.mark.slow
def test_every_readme_command_runs(tmp_path: Path) -> None:
    session = Session(tmp_path)
    try:
        for command in readme_commands(README.read_text(encoding="utf-8")):
            handler = rule_for(command.text)
            assert handler is not None, command
            if handler is not curl:
                session.stop_server()
            handler(session, command.text)
    finally:
        if session.server is not None:
            session.server.kill()
            session.server.communicate()

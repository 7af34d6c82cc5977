"""The commands that README.md and the manual (docs/) show, and the machinery that runs them as written.

Used by test_readme_commands.py and test_manual_commands.py:

- `bash_commands(text)`: the commands of a Markdown text's ```bash blocks, as bash reads them (a trailing
  backslash, `|`, `&&` or `||` continues a command on the next line; a quote left open continues it with
  the line break inside the quoted word; `#` outside quotes starts a comment).
- `Session`: a temporary project directory (`.venv` linked to the environment running the tests, a
  300-pair toy corpus where the quickstart puts the Bible corpus, data/bible_en_es) and what runs in it:
  each command in its own `bash -c`, a server in the background.
- the handlers that README's and the manual's rules share (run as written, training shortened to a tiny
  run, a server on a free port, curl against it, installs and the test command checked without running).
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
from dataclasses import dataclass, field
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from toy_corpus import tiny_train_overrides, write_toy_corpus  # tests/ is on sys.path: tests/conftest.py

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"

# The toy corpus stands where the commands expect the Bible corpus: the tiny run's overrides without its
# data location keys.
TRAIN_OVERRIDES = [
    override
    for override in tiny_train_overrides(Path("unused"), None)
    if override.split("=", 1)[0] not in ("data", "data.dir", "data.src_lang", "data.tgt_lang")
]
SWEEP_OVERRIDES = [  # and hydra.sweeper.n_trials=1 for an Optuna search
    "model.d_model=64",
    "model.ffn_dim=128",
    "model.encoder_layers=1",
    "model.decoder_layers=1",
]
COMMAND_LIKE = ("bash ", "seq2seq-", "pip ", "python", "mkdocs", "curl ", "source ", ".venv/")
CONTINUATIONS = ("\\", "|", "&&", "||")
CI_COMMAND = "bash .ci/run"  # shown inline in README, checked as the suite command is
TIMEOUT = 300
STDIN = "the man sees the dog\n"  # typed into a command that reads the terminal (translate without input=)


@dataclass
class Command:
    text: str  # as the page shows it, comments removed, continued lines joined
    line: int  # where it starts in its file
    page: str = "README.md"  # the file, relative to the repository


# ------------------------------------------------------------------------------------------- parsing


def scan(line: str, quote: str | None = None) -> tuple[str, str | None]:
    """`line` without its `# comment` (a `#` outside quotes, at the start or after a space), and the quote
    still open at its end; `quote` is the one open before it (a quoted word that spans lines)."""
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            escaped = True
        elif quote == '"':
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip(), None
    return line.rstrip(), quote


def bash_commands(text: str, page: str = "README.md") -> list[Command]:
    """The commands of the `bash` blocks of a Markdown text, in order."""
    commands: list[Command] = []
    inside, quote, pending, start = False, None, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if quote is None and line.strip().startswith("```"):
            inside = not inside and line.strip() == "```bash"
            continue
        if not inside:
            continue
        if quote is not None:  # the line continues a quoted word: its break and indentation are in it
            code, quote = scan(line, quote)
            pending += "\n" + code
        else:
            code, quote = scan(line.strip())
            start = start if pending else number
            pending = f"{pending} {code}".strip() if code else pending
        if quote is not None:
            continue
        if pending.endswith(CONTINUATIONS):
            pending = pending.removesuffix("\\").rstrip()
            continue
        if pending:
            commands.append(Command(pending, start, page))
        pending = ""
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


# ------------------------------------------------------------------------------------------- running


@dataclass
class Session:
    """A temporary project directory and what runs in it."""

    root: Path
    server: subprocess.Popen | None = None
    server_command: str = ""
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.port = self.port or free_port()
        venv = Path(sys.prefix)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / ".venv").symlink_to(venv, target_is_directory=True)
        write_toy_corpus(self.root / "data" / "bible_en_es")
        self.env = {
            **os.environ,
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
            "OMP_NUM_THREADS": "1",
            "HYDRA_FULL_ERROR": "0",
            **self.env,
        }

    def bash(self, command: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or self.root,
            env=self.env,
            input=STDIN,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert result.returncode == 0, f"`{command}` exited {result.returncode}:\n{result.stderr[-3000:]}"
        return result

    def with_port(self, command: str) -> str:
        """A curl line with the server's address and free port for localhost:8080 (or HOST:8080)."""
        return re.sub(r"\b(?:localhost|HOST):8080\b", f"127.0.0.1:{self.port}", command)

    def stop_server(self) -> None:
        """SIGTERM must stop the server with status 0."""
        if self.server is None:
            return
        server, self.server = self.server, None
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
        assert server.returncode == 0, (
            f"`{self.server_command}` exited {server.returncode} on SIGTERM:\n{self.server_log()}"
        )

    def server_log(self) -> str:
        return (self.root / "server.log").read_text(encoding="utf-8", errors="replace")[-3000:]

    def close(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.wait()
            self.server = None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------------------- handlers


def activate(session: Session, command: str) -> None:
    found = session.bash(f"{command} && command -v seq2seq-train").stdout.strip()
    assert Path(found).parent.resolve() == (session.root / ".venv" / "bin").resolve(), found


def quickstart(session: Session, command: str) -> None:
    assert command == "bash scripts/quickstart.sh"
    session.bash("bash -n scripts/quickstart.sh", cwd=REPOSITORY)


def suite_command(session: Session, command: str) -> None:
    assert command == ci_test_command(), f"the test command is not the one .ci/run runs ({ci_test_command()})"


def declared_extras() -> dict[str, list[str]]:
    return tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def pip_extras(session: Session, command: str) -> None:
    extras = re.fullmatch(r"(?:\.venv/bin/)?pip install -e '\.\[([\w,-]+)\]'", command)
    assert extras, f"unexpected pip command: {command}"
    missing = [name for name in extras.group(1).split(",") if name not in declared_extras()]
    assert not missing, f"pyproject.toml has no extra {missing}"


def train(session: Session, command: str, overrides: list[str] | None = None) -> None:
    """The command with the tiny run's overrides appended (`overrides`: others than TRAIN_OVERRIDES)."""
    extra = TRAIN_OVERRIDES if overrides is None else overrides
    if " -m " in f"{command} ":  # a sweep: the shape instead of model=tiny; threads from the launcher
        extra = [o for o in extra if o.split("=")[0] not in ("model", "trainer.num_threads")]
        extra += SWEEP_OVERRIDES + (["hydra.sweeper.n_trials=1"] if optuna_search(command) else [])
    session.bash(f"{command} {shlex.join(extra)}")


def optuna_search(command: str) -> bool:
    """The command's `+sweep=NAME` recipe replaces Hydra's basic sweeper (a grid) by an Optuna search."""
    named = re.search(r"\+sweep=(\w+)", command)
    recipe = REPOSITORY / "configs" / "sweep" / f"{named.group(1)}.yaml" if named else None
    return recipe is not None and "override /hydra/sweeper:" in recipe.read_text(encoding="utf-8")


def as_written(session: Session, command: str) -> None:
    session.bash(command)


def serve(session: Session, command: str) -> None:
    """The server in the background on a free port instead of 8080 (given or the default), until /health
    answers."""
    session.stop_server()
    moved = command.replace("port=8080", f"port={session.port}")
    moved = moved if moved != command else f"{command} port={session.port}"
    with open(session.root / "server.log", "w", encoding="utf-8") as log:
        session.server = subprocess.Popen(
            ["bash", "-c", f"exec {moved}"],
            cwd=session.root,
            env=session.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    session.server_command = command
    deadline = time.monotonic() + 120
    while True:
        if session.server.poll() is not None:
            code, session.server = session.server.returncode, None
            pytest.fail(f"`{command}` exited {code}:\n{session.server_log()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{session.port}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"`{command}` did not answer /health within 120 s"
        time.sleep(0.5)


def curl(session: Session, command: str) -> None:
    """Against the server a line before started: /translate answers translations, others a body."""
    assert session.server is not None, "a curl line needs the seq2seq-serve line before it"
    output = session.bash(session.with_port(command)).stdout
    if "/libretranslate/translate_file" in command:  # the answer names the file; `-o NAME`: fetched there
        saved = re.search(r"curl .*-o (\S+)$", command)
        if saved:
            assert (session.root / saved.group(1)).read_text(encoding="utf-8").strip(), output
        else:
            assert "/libretranslate/download_file/" in json.loads(output)["translatedFileUrl"], output
    elif "/libretranslate/translate" in command:
        assert isinstance(json.loads(output).get("translatedText"), str), output
    elif "/libretranslate/languages" in command:
        assert isinstance(json.loads(output), list), output
    elif "/translate" in command:
        answer = json.loads(output)
        assert isinstance(answer.get("translations"), list), answer
    elif "/health" in command:
        assert json.loads(output).get("model"), output
    else:
        assert output.strip(), f"`{command}` printed nothing"


def mkdocs_serve(session: Session, command: str) -> None:
    session.bash(f"{command} --help", cwd=REPOSITORY)


def mkdocs_build(session: Session, command: str) -> None:
    session.bash(f"{command} --site-dir {shlex.quote(str(session.root / 'site'))}", cwd=REPOSITORY)
    assert (session.root / "site" / "index.html").is_file()

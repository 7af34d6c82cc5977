"""Every command that README.md shows runs as written.

Which commands are checked
    Every command of every fenced code block in README.md whose info string is `bash`, as bash reads
    it (a trailing backslash, `|`, `&&` or `||` continues it on the next line, `#` starts a comment;
    doc_commands.bash_commands). Blocks of any other kind (`text`: a listing)
    hold no commands. Inline code spans that are commands with arguments (they start with `bash `,
    `seq2seq-`, `pip `, `python`, `mkdocs`, `curl `, `source ` or `.venv/` and hold a space) must
    repeat a command of a checked block, except `bash .ci/run` (see below); a bare name such as
    `seq2seq-train` is a name, not a command. A command that no rule below matches fails
    `test_every_readme_command_has_a_rule`, so a new command in README needs a decision here.

Where they run
    In README order, each in its own `bash -c`, in a temporary directory that stands for the project
    directory after the quickstart (doc_commands.Session, shared with test_manual_commands.py, which
    runs the manual's commands the same way): `.venv` there links to the environment running these
    tests, PATH starts with its bin/ (what `source .venv/bin/activate` does), and a 300-pair toy corpus
    (tests/toy_corpus.py) lies where the quickstart puts the Bible corpus,
    data/bible_en_es/{train,dev,test}.{en,es}. The mkdocs commands run in the repository itself,
    where mkdocs.yml is.

How each command is checked (RULES below)
    run as written        seq2seq-translate, seq2seq-score, seq2seq-export, curl, `source .venv/bin/activate`
                          (then `command -v seq2seq-train` must find the venv's)
    shortened             seq2seq-train runs as written with TRAIN_OVERRIDES appended, which make it a
                          4-update run of the tiny model (Hydra keeps the last value of a key: the
                          budget stays as written, max_updates stops it first); a sweep (`-m`) also
                          gets SWEEP_OVERRIDES: the model shape fixed (keys given on the command line
                          leave the search), and an Optuna search one trial (hydra.sweeper.n_trials=1)
    another port          seq2seq-serve runs as written but on a free port instead of 8080 (also in
                          the curl lines), in the background until /health answers; the curl lines run
                          against it (a /translate answer must hold translations); SIGTERM must then
                          stop it with status 0
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

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from doc_commands import (  # tests/docs/doc_commands.py: the machinery README's and the manual's tests share
    CI_COMMAND,
    README,
    REPOSITORY,
    Session,
    activate,
    as_written,
    bash_commands,
    ci_test_command,
    curl,
    inline_commands,
    mkdocs_build,
    mkdocs_serve,
    pip_extras,
    quickstart,
    serve,
    suite_command,
    train,
)

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
    commands = bash_commands(text)
    assert commands, "README.md shows no bash block"
    unknown = [f"README.md:{c.line}: {c.text}" for c in commands if rule_for(c.text) is None]
    assert not unknown, "commands without a rule in this test:\n" + "\n".join(unknown)
    shown = {c.text for c in commands}
    stray = [span for span in inline_commands(text) if span not in shown and span != CI_COMMAND]
    assert not stray, f"inline commands that no checked block shows: {stray}"


def test_the_two_commands_open_the_readme() -> None:
    first_two = [c.text for c in bash_commands(README.read_text(encoding="utf-8"))[:2]]
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
        for command in bash_commands(README.read_text(encoding="utf-8")):
            handler = rule_for(command.text)
            assert handler is not None, command
            if handler is not curl:
                session.stop_server()
            handler(session, command.text)
    finally:
        session.close()

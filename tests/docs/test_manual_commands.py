"""Every command that the manual (docs/**/*.md) shows runs as written, or has a stated reason not to run
here and passes every check that needs no run. (README.md's commands: test_readme_commands.py.)

Which commands are checked
    Every command of every ```bash block of every page, as bash reads it (doc_commands.bash_commands: a
    trailing backslash, `|`, `&&` or `||` continues it; a quote left open continues it across the line
    break, which Hydra's lexer then refuses, so such a command fails). Each must match a rule of its
    page in RULES (or of COMMON), the first that matches deciding: a command without one fails
    `test_every_manual_command_has_a_rule`, so a new command in the manual needs a decision here, and
    so does a rule that no longer matches anything.

Checked without running it (quick, in this process; command_checks.problems): every command
    Split as bash splits it; a seq2seq command's overrides are parsed by Hydra's override parser and
    composed with the command's config against configs/ (a lexer error, an unknown key or a missing
    config fails), argparse commands parse their arguments, scripts and programs exist, installs name
    existing extras and .ci/run's pins, `python -c` code compiles, sacreBLEU knows the test sets named.
    `--config-dir ~/seq2seq-configs` gets the manual's YAML blocks that name themselves its files.

Not run (`run=None`, each with its reason)
    Hugging Face Hub downloads and the commands that need their models, GPUs, several machines, SLURM,
    studies and benchmarks of minutes to hours, sacreBLEU downloads, installs, the quickstart and the
    suite itself, a corpus of the user's own under /corpora; and a few that would only repeat what runs
    here or elsewhere in the suite at a cost in minutes (`same_as` another page, the reason names where).
    `test_commands_not_run_parse` (slow) runs `bash -n` on each, and `--help` of every script they name.

Run as written (slow: `test_every_runnable_manual_command_runs`)
    Page by page, in the order of README's list of the manual's pages, then the rest, each page in a
    fresh project directory (manual_projects.Project: `.venv` linked, PATH set, the checkout's scripts/
    and benchmarks/ linked, the toy corpus plus a few verses at data/bible_en_es, recorded as the Bible
    recipe's own output so that `seq2seq-prepare` keeps it) with what the page assumes
    (manual_projects.PAGE_FILES): a tiny run, trained once, linked where a page expects a trained run
    (runs/bible.en-es/, runs/quickstart/, model.pt, ...), and the files the page reads (test.en,
    glossary.tsv from the page's own block, ...). A command a page shows twice runs where it is shown
    last when its rule says `last`. The rules change a command only so:
    shortened         seq2seq-train gets MANUAL_TRAIN_OVERRIDES appended (README's tiny run, 5 updates,
                      a snapshot every update, so that averaging has two); a command that chooses
                      `model=X` gets `model=X_tiny` (its own family's tiny size) instead of model=tiny, a
                      fine-tuning (`init_from=`) neither a model nor a tokenizer (both are the
                      checkpoint's); a sweep README's fixed small shape and, an Optuna search, one trial;
                      seq2seq-qe-train gets QE_TRAIN_OVERRIDES
    another port      seq2seq-serve on a free port instead of 8080 (given or the default); curl lines go
                      to it (from localhost or HOST); a curl line with no server before it gets the
                      page's (PAGE_SERVERS, else the page's first seq2seq-serve line)
    a variable        `export NAME=...` is evaluated and NAME kept for the page's later commands
    a sweep's date    `multirun/<run>/<date>` is the newest sweep directory there
    a server's help   TensorBoard, a server that runs until stopped: `--help`
    Argos's home      argostranslate's commands (argospm, argos-translate, `python -c` code importing it) get
                      XDG_DATA_HOME, XDG_CONFIG_HOME and XDG_CACHE_HOME in the project directory: packages
                      installed there, never in the home directory of whoever runs the tests

Budget: about four minutes of CPU on one thread (OMP_NUM_THREADS=1) for the slow run.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from command_checks import problems, simple_commands
from doc_commands import (
    DOCS,
    README,
    REPOSITORY,
    Command,
    Session,
    activate,
    as_written,
    bash_commands,
    ci_test_command,
    mkdocs_serve,
    serve,
)
from manual_projects import (
    BASE_RUN_OVERRIDES,
    MANUAL_TRAIN_OVERRIDES,
    Project,
    argos,
    export_variable,
    kept_toy_corpus,
    manual_train,
    newest_sweep,
    page_curl,
    place,
    qe_train,
    server_help,
)

Handler = Callable[[Session, str], None]

QUICK_LOOP = '.venv/bin/python -m pytest -m "not slow" -n 2'  # docs/contributing.md
MULTILINGUAL_COMMAND = "seq2seq-train data=parallel_files data.dir=corpora/en-es"  # the command

# Reasons a command does not run here.
QUICKSTART = "30 minutes on the Bible corpus; .ci/run runs it as a smoke run on a tiny model"
SUITE = "the test suite itself (this test is part of it)"
CI = ".ci/run: installs, the quickstart smoke run, the wheel, the manual and the suite"
INSTALL = "installs packages: the environment running the tests has every extra .ci/run installs"
HUB = "downloads a model from the Hugging Face Hub"
HUB_MODEL = "needs a model imported from the Hugging Face Hub (models/opus-en-es.pt, models/nllb.pt, nllb.pt)"
GPU = "needs CUDA GPUs"
MACHINES = "torchrun across machines with 8 GPUs each"
TORCHRUN_CPU = "two training processes; tests/cli/test_train_cli.py runs the same torchrun launch on the toy"
FSDP = "several training processes (or GPUs); tests/train/test_fsdp.py trains fsdp on two gloo ranks"
SLURM = "submits SLURM jobs"
STUDY = "a study: hours of training on the Bible corpus"
BENCHMARK = "a benchmark: minutes of measurements on the Bible corpus"
LARGE_MODELS = "a benchmark: half an hour and 20 GB of memory for ranks of an NLLB-shaped model"
SACREBLEU = "downloads WMT test sets (sacreBLEU) into /corpora"
OWN_CORPUS = "a corpus of the user's own under /corpora (WMT-sized)"
SAME_AS_README = "README.md shows the same command; test_readme_commands.py runs it"
LINT = "lints or reformats the working tree: its state, not the command, decides the outcome"
SWEEP_HOURS = "a sweep of 30-minute trials on the Bible corpus (one trial is run on sweeps.md)"
PLACEHOLDER_QUICKSTART = "runs the quickstart (30 minutes) with a placeholder for the report's settings"
TERMS = "measures constrained decoding on the Bible test set's rare words and names; the toy corpus has none"
ENQUEUE = (
    "queues a trial in the study that earlier runs of the recipe made (hours of trials); "
    "tests/cli/test_sweeps.py queues one and trains it"
)
# Not run to keep this test's CPU time to minutes: what they would add runs elsewhere here.
QUEUED_TRIAL = (
    "trains the trial the line before queues (not run); the Optuna search runs above (recipe_search)"
)
SAME_GRID = "the grid of the line before, as a recipe: the same three jobs (the recipe is composed here)"
AVX2_SEARCH = "a 4-hour search of the same sweeper as recipe_search, which runs above with its report"
IN_LONG_INPUTS = "its settings are a part of experiment=long_inputs, which runs below"
AS_GETTING_STARTED = (
    "getting-started.md's training line runs these settings (and its averaged.pt is translated)"
)
COMPILE = (
    "half a minute of CPU compiling the decoder step; tests/decode/test_compiled_decoding.py compiles it"
)
QE_STUDY = "the QE study's own run: 50 minutes on the study's corpus (runs/qe3/data)"


@dataclass(frozen=True)
class Rule:
    pattern: str  # re.fullmatch on the command
    run: Handler | None  # how the slow test runs it; None: not run here
    reason: str = ""  # why not (run=None)
    last: bool = False  # the page shows the command more than once: it runs where it is shown last
    runs_on: str = ""  # not run because the same command runs on this page


def not_run(pattern: str, reason: str) -> Rule:
    return Rule(pattern, None, reason)


def same_as(page: str, pattern: str) -> Rule:
    """A command that another page shows as well, where it runs."""
    return Rule(pattern, None, f"{page} shows the same command; it runs there", runs_on=page)


# ------------------------------------------------------------------------------------------- the rules

COMMON = [
    Rule(r"source \.venv/bin/activate", activate),
    Rule(r"bash scripts/quickstart\.sh", None, QUICKSTART),
    Rule(r"\.venv/bin/python -m pytest .*", None, SUITE),
    Rule(r"bash \.ci/run", None, CI),
    Rule(r"(\.venv/bin/)?pip install .*", None, INSTALL),
    Rule(r"python3 -m venv \.venv( && .*)?", None, INSTALL),
]

RULES: dict[str, list[Rule]] = {
    "getting-started.md": [
        Rule(r"seq2seq-prepare", kept_toy_corpus),
        Rule(r"seq2seq-train .*", manual_train),
        Rule(r"seq2seq-(translate|score) .*", as_written),
        Rule(r"tensorboard --logdir runs/", server_help),
    ],
    "model-families.md": [Rule(r"seq2seq-train .*", manual_train)],
    "training.md": [
        Rule(r"seq2seq-train( trainer\.max_minutes=30)?", manual_train),
        Rule(r"seq2seq-train --(help|cfg job)", as_written),
        not_run(r"seq2seq-(prepare|train) +data=parallel_(files|tsv) .*", OWN_CORPUS),
        not_run(r"seq2seq-train --config-dir ~/seq2seq-configs .*", OWN_CORPUS),
        not_run(r"sacrebleu -t .*", SACREBLEU),
        not_run(r"torchrun --nproc_per_node=\d+ -m seq2seq\.cli\.train trainer\.strategy=fsdp .*", FSDP),
        not_run(r"python benchmarks/large_models\.py.*", LARGE_MODELS),
        not_run(r"torchrun --nproc_per_node=2 .*trainer\.device=cpu", TORCHRUN_CPU),
        not_run(r"torchrun --nproc_per_node=4 .*trainer\.device=cuda.*", GPU),
        not_run(r"torchrun --nnodes=2 .*", MACHINES),
        not_run(r"seq2seq-train experiment=finetune init_from=models/opus-en-es\.pt .*", HUB_MODEL),
        not_run(
            r"seq2seq-train model\.cross_downsample=2 model\.checkpoint_activations=true .*", IN_LONG_INPUTS
        ),
        not_run(
            r"seq2seq-train trainer\.average_fraction=0\.2 trainer\.tune_decoding=true .*", AS_GETTING_STARTED
        ),
        Rule(r"seq2seq-train .*", manual_train),
    ],
    "decoding.md": [
        Rule(r"(echo .* \| )?seq2seq-(translate|score|average) .*", as_written),
        Rule(r"scripts/decode_and_score\.sh .*", as_written),
    ],
    "using-a-model.md": [
        not_run(r"seq2seq-translate checkpoint=nllb\.pt .*", HUB_MODEL),
        not_run(r"curl .*fra_Latn.*", HUB_MODEL),
        same_as(
            "decoding.md", r"echo .* \| seq2seq-translate checkpoint=runs/bible\.en-es/best\.pt decode=greedy"
        ),
        same_as(
            "decoding.md", r"seq2seq-translate checkpoint=\[runs/a/best\.pt,runs/b/best\.pt\] input=test\.en"
        ),
        same_as(
            "multilingual.md",
            r"printf .* \| seq2seq-translate checkpoint=runs/bible_both\.en-es/averaged\.pt .*",
        ),
        Rule(
            r"seq2seq-translate checkpoint=exported/bible-int8 input=test\.en output=test\.hyp",
            as_written,
            last=True,
        ),
        not_run(r"seq2seq-translate .* compile=true", COMPILE),
        not_run(r"apt-get install -y libtcmalloc-minimal4", INSTALL),
        Rule(
            r"(echo .* \| |printf .* \| |LD_PRELOAD=\S+ )?seq2seq-(translate|export|shortlist) .*", as_written
        ),
        Rule(r"seq2seq-serve .*", serve),
        Rule(r"curl .*", page_curl),
        Rule(r"export SEQ2SEQ_API_KEY=.*", export_variable),
    ],
    "terminology.md": [
        Rule(r"printf .* > test\.constraints", as_written),
        Rule(r"(head -3 test\.en \| )?seq2seq-translate .*", as_written),
        Rule(r"seq2seq-serve .*", serve),
        Rule(r"curl .*", page_curl),
        Rule(r"python benchmarks/terminology\.py --build-only", as_written),
        not_run(r"python benchmarks/terminology\.py --checkpoint .*", TERMS),
    ],
    "libretranslate.md": [
        Rule(r"seq2seq-serve .*", serve),
        Rule(r"curl .*", page_curl),
        Rule(r"printf .* > letter\.txt", as_written),
        Rule(r"seq2seq-export .* target=argos .*", as_written),
        Rule(r"python -c \"from argostranslate import .*\"|argospm list|argos-translate .*", argos),
    ],
    "markup.md": [
        not_run(r"python benchmarks/markup\.py .*", BENCHMARK),
        Rule(r"seq2seq-prepare .*", kept_toy_corpus),
        Rule(r"seq2seq-train .*", manual_train),
        Rule(r"seq2seq-translate .*", as_written),
        Rule(r"seq2seq-serve .*", serve),
        Rule(r"curl .*", page_curl),
    ],
    "multilingual.md": [
        Rule(r"seq2seq-prepare .*", kept_toy_corpus),
        Rule(r"seq2seq-train .*", manual_train),
        Rule(r"python scripts/score_directions\.py .*", as_written),
        Rule(r"(printf .* \| )?seq2seq-translate .*", as_written),
        Rule(r"curl .*", page_curl),
    ],
    "data-cleaning.md": [not_run(r"seq2seq-prepare data=parallel_files data\.dir=/corpora/.*", OWN_CORPUS)],
    "quality-estimation.md": [
        Rule(r"seq2seq-qe-data .*", as_written),
        not_run(r"seq2seq-qe-train .*runs/qe3/.*", QE_STUDY),
        not_run(r"seq2seq-average --inputs runs/qe3/.*", QE_STUDY),
        Rule(r"seq2seq-qe-train .*", qe_train),
        Rule(r"seq2seq-qe .*", as_written),
    ],
    "sweeps.md": [
        not_run(r".* hydra/launcher=slurm .*", SLURM),
        not_run(r"EXPERIMENT= EXTRA=.* bash scripts/quickstart\.sh", PLACEHOLDER_QUICKSTART),
        not_run(r"python scripts/sweep_enqueue\.py .*", ENQUEUE),
        not_run(r"seq2seq-train -m \+sweep=recipe_tune .*", QUEUED_TRIAL),
        not_run(r"seq2seq-train -m \+sweep=positional .*", SAME_GRID),
        not_run(r"seq2seq-train -m \+sweep=recipe_avx2", AVX2_SEARCH),
        not_run(r"python scripts/sweep_report\.py multirun/bible\.en-es/recipe_avx2", AVX2_SEARCH),
        Rule(r"seq2seq-train -m .*", manual_train),
        Rule(r"python scripts/sweep_report\.py .*/<date>", newest_sweep),
        Rule(r"python scripts/sweep_report\.py .*", as_written),
    ],
    "benchmarks.md": [
        Rule(r"uptime", as_written),
        not_run(r"python benchmarks/\w+\.py", BENCHMARK),
    ],
    "pretrained-models.md": [
        not_run(r"python -c \"from huggingface_hub import snapshot_download; .*", HUB),
        not_run(r"seq2seq-(import|translate|serve|train|export) .*", HUB_MODEL),
        not_run(r"curl .*deu_Latn.*", HUB_MODEL),
    ],
    "index.md": [
        Rule(r"mkdocs serve", mkdocs_serve),
        not_run(r"mkdocs build --strict", SAME_AS_README),
    ],
    "contributing.md": [not_run(r"\.venv/bin/ruff (check|format) seq2seq tests", LINT)],
    "studies/gpu-h200.md": [not_run(r"seq2seq-train .*", GPU)],
    "studies/recipe-search.md": [
        not_run(r"seq2seq-train -m .*", SWEEP_HOURS),
        not_run(r"python scripts/sweep_report\.py .*", STUDY),
    ],
    "studies/recipe-tune.md": [
        not_run(r"seq2seq-train -m .*", SWEEP_HOURS),
        not_run(r"python scripts/sweep_(report|enqueue)\.py .*", STUDY),
    ],
    "studies/recipe_cpu_fp32.md": [
        not_run(r"(\w+=\w+ )*seq2seq-train -m .*", SWEEP_HOURS),
        not_run(r"python scripts/sweep_report\.py .*", STUDY),
    ],
    **{
        f"studies/{name}.md": [not_run(r"python (scripts|benchmarks)/\w+\.py.*", STUDY)]
        for name in (
            "alignment-layers",
            "distillation",
            "domain-adaptation",
            "families",
            "guided-alignment",
            "lora",
            "multilingual",
        )
    },
}

# The server a page's curl lines talk to when no seq2seq-serve line of the page runs before them.
PAGE_SERVERS = {"multilingual.md": "seq2seq-serve checkpoint=runs/bible_both.en-es/averaged.pt port=8080"}


def rule_for(command: Command) -> Rule | None:
    page = Path(command.page).relative_to("docs").as_posix()
    for rule in [*RULES.get(page, []), *COMMON]:
        if re.fullmatch(rule.pattern, command.text):
            return rule
    return None


def manual_commands() -> list[Command]:
    return [command for page in pages() for command in page_commands(page)]


def page_commands(page: Path) -> list[Command]:
    return bash_commands(page.read_text(encoding="utf-8"), page.relative_to(REPOSITORY).as_posix())


def pages() -> list[Path]:
    """The manual's pages in the order of README's list of them, then the rest, sorted."""
    listed = re.findall(
        r"\]\((docs/[\w/-]+\.md)\)", README.read_text(encoding="utf-8").split("## The manual")[1]
    )
    ordered = [REPOSITORY / link for link in dict.fromkeys(listed)]
    return ordered + sorted(set(DOCS.rglob("*.md")) - set(ordered))


def user_config_dirs(root: Path) -> dict[str, Path]:
    """The manual's YAML blocks whose first line names a file in ~/seq2seq-configs, written under root."""
    for page in DOCS.rglob("*.md"):
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
            named = re.match(r"# ~/seq2seq-configs/([\w/]+\.yaml):", block)
            if named:
                target = root / "seq2seq-configs" / named.group(1)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block, encoding="utf-8")
    return {"~/seq2seq-configs": root / "seq2seq-configs"}


def later(command: Command, page: Path) -> set[str]:
    """The commands the page shows after `command`."""
    return {c.text for c in page_commands(page) if c.line > command.line}


def page_server(page: Path, commands: list[Command]) -> str:
    served = [c.text for c in commands if c.text.startswith("seq2seq-serve ")]
    return PAGE_SERVERS.get(page.relative_to(DOCS).as_posix(), served[0] if served else "")


def run_page(project: Project, page: Path) -> list[Command]:
    """The page's commands that have a run rule, in order; returns them."""
    ran = []
    for command in page_commands(page):
        rule = rule_for(command)
        assert rule is not None, f"{command.page}:{command.line}: no rule"
        if rule.run is None or (rule.last and command.text in later(command, page)):
            continue
        if rule.run is not page_curl:
            project.stop_server()
        try:
            rule.run(project, command.text)
        except (AssertionError, pytest.fail.Exception) as failure:
            raise AssertionError(f"{command.page}:{command.line}: {failure}") from None
        ran.append(command)
    project.stop_server()
    return ran


# ------------------------------------------------------------------------------------------- tests


def test_every_manual_command_has_a_rule() -> None:
    commands = manual_commands()
    assert len(commands) > 150, "the manual's bash blocks were not found"
    spanning = [f"{c.page}:{c.line}: {c.text}" for c in commands if "\n" in c.text]
    assert not spanning, (
        "a quoted word spans a line break (Hydra's lexer refuses the override; write it on one line):\n"
        + "\n".join(spanning)
    )
    unknown = [f"{c.page}:{c.line}: {c.text}" for c in commands if rule_for(c) is None]
    assert not unknown, "commands without a rule in this test:\n" + "\n".join(unknown)
    used = {(Path(c.page).relative_to("docs").as_posix(), rule_for(c).pattern) for c in commands}
    used_patterns = {pattern for _, pattern in used}
    stale = [f"{page}: {rule.pattern}" for page, rules in RULES.items() for rule in rules
             if (page, rule.pattern) not in used]  # fmt: skip
    stale += [f"COMMON: {rule.pattern}" for rule in COMMON if rule.pattern not in used_patterns]
    assert not stale, "rules that no command of their page matches:\n" + "\n".join(stale)
    unexplained = [rule.pattern for rule in all_rules() if rule.run is None and not rule.reason]
    assert not unexplained, f"rules that run nothing and say no reason: {unexplained}"


def all_rules() -> list[Rule]:
    return [*COMMON, *(rule for rules in RULES.values() for rule in rules)]


def test_commands_left_to_another_place_run_there() -> None:
    """A `same_as` command runs on the page it names; a `last` rule's command is shown again later."""
    for command in manual_commands():
        rule = rule_for(command)
        page = Path(command.page).relative_to("docs").as_posix()
        if rule.runs_on:
            there = [c for c in page_commands(DOCS / rule.runs_on) if c.text == command.text]
            assert there and rule_for(there[0]).run, (
                f"{command.page}:{command.line}: not run on {rule.runs_on}"
            )
        if rule.last:
            shown = [c for c in page_commands(DOCS / page) if c.text == command.text]
            assert len(shown) > 1, f"{command.page}:{command.line}: shown once, but its rule says last=True"


def test_the_multilingual_command_runs_for_real() -> None:
    page = DOCS / "multilingual.md"
    found = [c for c in page_commands(page) if c.text.startswith(MULTILINGUAL_COMMAND)]
    assert len(found) == 1, f"{page.name} shows no `{MULTILINGUAL_COMMAND} ...` command"
    assert rule_for(found[0]).run is manual_train


def test_what_the_not_run_rules_assume() -> None:
    """The commands left to README's test or to .ci/run are the ones those run."""
    commands = manual_commands()
    readme = {c.text for c in bash_commands(README.read_text(encoding="utf-8"))}
    for command in (c for c in commands if rule_for(c).reason == SAME_AS_README):
        assert command.text in readme, f"{command.page}:{command.line}: README shows no `{command.text}`"
    for command in (c for c in commands if rule_for(c).reason == SUITE):
        assert command.text in (ci_test_command(), QUICK_LOOP), (
            f"{command.page}:{command.line}: {command.text}"
        )
    for command in (c for c in commands if rule_for(c).reason == QUICKSTART):
        assert command.text == "bash scripts/quickstart.sh", f"{command.page}:{command.line}: {command.text}"
    named = {path for rule in all_rules() for path in re.findall(r"tests/[\w/]+\.py", rule.reason)}
    missing = sorted(path for path in named if not (REPOSITORY / path).is_file())
    assert not missing, f"reasons name test files that do not exist: {missing}"


@pytest.mark.parametrize("page", [p.relative_to(DOCS).as_posix() for p in pages()])
def test_manual_commands_pass_the_checks_that_need_no_run(page: str, tmp_path: Path) -> None:
    config_dirs = user_config_dirs(tmp_path)
    failures = [
        f"{c.page}:{c.line}: {problem}"
        for c in page_commands(DOCS / page)
        for problem in problems(c.text, config_dirs)
    ]
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_commands_not_run_parse(tmp_path: Path) -> None:
    """`bash -n` of every command that does not run, and `--help` of each script it names."""
    failures, scripts = [], set()
    for command in manual_commands():
        if rule_for(command).run is not None:
            continue
        check = subprocess.run(
            ["bash", "-n", "-c", command.text], capture_output=True, text=True, check=False
        )
        if check.returncode:
            failures.append(f"{command.page}:{command.line}: bash -n: {check.stderr.strip()}")
        scripts |= {s[1] for s in simple_commands(command.text) if s[0] in ("python", "python3") and
                    len(s) > 1 and s[1].endswith(".py")}  # fmt: skip
    session = Session(tmp_path)
    for script in sorted(scripts):
        try:
            session.bash(f"python {shlex.quote(str(REPOSITORY / script))} --help > /dev/null")
        except AssertionError as failure:
            failures.append(f"{script} --help: {failure}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_every_runnable_manual_command_runs(tmp_path: Path) -> None:
    base = Project(tmp_path / "base")
    base.bash(f"seq2seq-train run_name=base {shlex.join([*MANUAL_TRAIN_OVERRIDES, *BASE_RUN_OVERRIDES])}")
    run = base.root / "runs" / "base"
    ran: list[Command] = []
    for page in pages():
        commands = page_commands(page)
        if not any(rule_for(c).run for c in commands):
            continue
        root = tmp_path / page.relative_to(DOCS).as_posix().replace("/", "-").removesuffix(".md")
        project = Project(root, page_server=page_server(page, commands))
        try:
            place(project, page, run)
            ran += run_page(project, page)
        finally:
            project.close()
    assert any(c.text.startswith(MULTILINGUAL_COMMAND) for c in ran), "the multilingual command did not run"

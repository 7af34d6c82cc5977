"""The project directories the manual's commands run in (test_manual_commands.py), and how they run there.

A page's project directory is a doc_commands.Session directory (`.venv` linked, PATH set, the toy corpus
at data/bible_en_es) with the checkout's scripts/ and benchmarks/ linked, VERSES added to the corpus, the
corpus recorded as the Bible recipe's own output (`seq2seq-prepare` keeps it), and what the page assumes
(PAGE_FILES): a tiny trained run linked where the page expects one, the files it reads.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from command_checks import words
from doc_commands import DOCS, REPOSITORY, TRAIN_OVERRIDES, Session, curl, serve, train

# The README test's tiny run, 5 updates with a weights snapshot each, so that trainer.average_fraction=0.2
# averages two (updates 4 and 5) into averaged.pt; a vocabulary of 100 pieces, whole words beside the
# characters VERSES add (at 60 the pieces are characters, and a beam search of the model ends at once).
MANUAL_TRAIN_OVERRIDES = [
    *(o for o in TRAIN_OVERRIDES if not o.startswith(("trainer.max_updates=", "data.tokenizer.vocab_size="))),
    "data.tokenizer.vocab_size=100",
    "trainer.max_updates=5",
    "trainer.snapshot_every=1",
]
# The run the pages' checkpoints come from: averaged.pt, and five numbered checkpoints (seq2seq-average
# --last 5) beside best.pt and last.pt.
BASE_RUN_OVERRIDES = ["trainer.average_fraction=0.2", "trainer.save_every=1"]
# seq2seq-qe-train from the tiny run's best.pt: the shape of model=tiny's encoder, which init_from copies.
QE_TRAIN_OVERRIDES = [
    "model.d_model=64", "model.ffn_dim=256", "model.layers=2", "trainer.max_updates=4",
    "trainer.validate_every=2", "trainer.save_every=2", "trainer.max_tokens=600",
    "trainer.progress_bar=false", "trainer.num_threads=1", "schedule.warmup=2",
]  # fmt: skip

# Added to the toy corpus's training pairs: the pages' example sentences and terms, whose characters the
# tiny model's vocabulary must have (a constraint or an avoided phrase it cannot write is refused).
VERSES = [
    ("In the beginning was the Word.", "En el principio era el Verbo."),
    ("God is love.", "Dios es amor."),
    ("The LORD is my shepherd.", "Jehová es mi pastor."),
    ("Jesus wept.", "Y lloró Jesús."),
    ("In the beginning God created the heavens and the earth.", "En el principio crió Dios los cielos."),
    ("And the Lord God said.", "Y dijo el Señor Dios."),
    ("Click here.", "Haga clic aquí."),
]
TRAIN_PAIRS = 300 + len(VERSES)  # write_toy_corpus's and these

XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="app" source-language="en" target-language="es" datatype="plaintext">
    <body>
      <trans-unit id="1"><source>the man sees the <g id="1">dog</g></source></trans-unit>
      <trans-unit id="2"><source>a woman finds the house</source></trans-unit>
    </body>
  </file>
</xliff>
"""
POT = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "the man sees the dog"
msgstr ""
"""
HTML = """<!DOCTYPE html>
<html><head><title>the house</title></head>
<body><p>the man <b>sees</b> the dog</p></body></html>
"""
MARKUP_LINES = "the man <b>sees</b> the dog\nsave {0} files to %s\n"

# What a page assumes in its project directory: path -> "run:" (the base run's directory), "run:FILE"
# (one of its files), "corpus:" (a copy of the toy corpus), "corpus:FILE", "first-words:FILE" (the first
# word of each line of a corpus file), "block:LINE" (the page's fenced block that starts with LINE),
# "text:TEXT".
RUN = "run:"
TEST_FILES = {"test.en": "corpus:test.en", "test.es": "corpus:test.es"}
REFERENCES = {name: "corpus:test.es" for name in ("test.hyp", "hyp.es", "ref.es", "ref1.es")}
PAGE_FILES: dict[str, dict[str, str]] = {
    "training.md": {"data/medical": "corpus:"},
    "decoding.md": {
        "runs/bible.en-es": RUN, "runs/quickstart": RUN, "runs/a": RUN, "runs/b": RUN,
        "runs/a/checkpoint_3000.pt": "run:checkpoint_4.pt",
        "runs/a/checkpoint_4000.pt": "run:checkpoint_5.pt",
        **TEST_FILES, **REFERENCES, "ref2.es": "corpus:dev.es", "prefixes.es": "first-words:test.es",
    },
    "using-a-model.md": {
        "runs/bible.en-es": RUN, "runs/bible.es-en": RUN, "runs/quickstart": RUN, "runs/a": RUN, "runs/b": RUN, **TEST_FILES,
        "big.en": "corpus:test.en",
    },
    "terminology.md": {"runs/quickstart": RUN, **TEST_FILES, "glossary.tsv": "block:# glossary.tsv"},
    "libretranslate.md": {"runs/quickstart": RUN},
    "markup.md": {
        "runs/quickstart": RUN, "model.pt": "run:best.pt", "page.en": "block:In the <b>beginning</b>",
        "page.txt": f"text:{MARKUP_LINES}", "ui.txt": f"text:{MARKUP_LINES}", "page.html": f"text:{HTML}",
        "strings.xlf": f"text:{XLIFF}", "app.pot": f"text:{POT}",
    },
    "multilingual.md": {"corpora/en-es": "corpus:", **TEST_FILES},
    "quality-estimation.md": {
        "runs/quickstart": RUN, "runs/quickstart/checkpoint_300.pt": "run:checkpoint_2.pt",
        "runs/quickstart/checkpoint_500.pt": "run:checkpoint_3.pt",
        "runs/quickstart/checkpoint_800.pt": "run:checkpoint_4.pt",
        **TEST_FILES, "test.hyp": "corpus:test.es",
    },
}  # fmt: skip


@dataclass
class Project(Session):
    """A page's project directory; `page_server`: the server its curl lines talk to when none runs."""

    page_server: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        for folder in ("scripts", "benchmarks"):  # a checkout's, which the pages run from it
            (self.root / folder).symlink_to(REPOSITORY / folder, target_is_directory=True)
        corpus = self.root / "data" / "bible_en_es"
        for language, side in (("en", 0), ("es", 1)):
            with open(corpus / f"train.{language}", "a", encoding="utf-8") as train_file:
                train_file.writelines(pair[side] + "\n" for pair in VERSES)
        mark_as_built(corpus)


def mark_as_built(directory: Path) -> None:
    """The toy corpus recorded as the Bible recipe's own output (stats.json with the fingerprint that
    seq2seq.data.bible.prepare.prepare_bible computes from its arguments, and the .ids files), so that
    `seq2seq-prepare` with data=bible_en_es or bible_en_es_both keeps it instead of building the Bible."""
    from omegaconf import OmegaConf

    from seq2seq.data.bible.prepare import SPLITS, recipe_fingerprint

    config = OmegaConf.load(REPOSITORY / "configs" / "data" / "bible_en_es.yaml")
    recipe = OmegaConf.to_container(config.recipe)
    _, fingerprint = recipe_fingerprint(
        modules=recipe["modules"], strongs_from=recipe.get("strongs_from"), split=recipe.get("split"),
        max_length_z=recipe["max_length_z"],
    )
    (directory / "stats.json").write_text(json.dumps({"fingerprint": fingerprint}), encoding="utf-8")
    for split in SPLITS:
        lines = (directory / f"{split}.en").read_text(encoding="utf-8").count("\n")
        (directory / f"{split}.ids").write_text("x\tx\n" * lines, encoding="utf-8")


def place(project: Project, page: Path, run: Path) -> None:
    """What the page assumes in its project directory (PAGE_FILES), `run` being the base run."""
    corpus = project.root / "data" / "bible_en_es"
    for target, source in PAGE_FILES.get(page.relative_to(DOCS).as_posix(), {}).items():
        destination = project.root / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        kind, _, name = source.partition(":")
        if kind == "run" and not name:
            skipped = shutil.ignore_patterns(".run.lock", "tensorboard", "snapshot_*")
            shutil.copytree(run, destination, copy_function=hard_link, dirs_exist_ok=True, ignore=skipped)
        elif kind == "run":
            hard_link(run / name, destination)
        elif kind == "corpus" and not name:
            shutil.copytree(
                corpus, destination, ignore=shutil.ignore_patterns("cache", "*.ids", "stats.json")
            )
        elif kind == "corpus":
            shutil.copyfile(corpus / name, destination)
        elif kind == "first-words":
            lines = (corpus / name).read_text(encoding="utf-8").splitlines()
            destination.write_text("".join(line.split()[0] + "\n" for line in lines), encoding="utf-8")
        elif kind == "block":
            destination.write_text(fenced_block(page, name), encoding="utf-8")
        else:
            destination.write_text(name, encoding="utf-8")


def fenced_block(page: Path, first_line: str) -> str:
    """The text of the page's fenced block that starts with `first_line`."""
    for block in re.findall(r"```\w*\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"{page.name} has no block starting {first_line!r}")


def hard_link(source: str | Path, destination: str | Path) -> None:
    """A checkpoint shared between projects: every writer replaces a file (atomic rename), never edits it."""
    Path(destination).unlink(missing_ok=True)
    Path(destination).hardlink_to(source)


# ------------------------------------------------------------------------------------------- handlers


def manual_train(session: Session, command: str) -> None:
    train(session, command, shortening(command))


def shortening(command: str) -> list[str]:
    """MANUAL_TRAIN_OVERRIDES for the command: its model family's tiny size, none for a fine-tuning."""
    given = words(command)
    chosen = [w.split("=", 1)[1] for w in given if w.startswith("model=")]
    overrides = list(MANUAL_TRAIN_OVERRIDES)
    if chosen:
        tiny = f"{chosen[-1]}_tiny"
        assert (REPOSITORY / "configs" / "model" / f"{tiny}.yaml").is_file(), f"no model={tiny} for {command}"
        overrides = [f"model={tiny}" if o == "model=tiny" else o for o in overrides]
    if any(w.startswith("init_from=") for w in given):
        overrides = [o for o in overrides if not o.startswith(("model=", "data.tokenizer."))]
    return overrides


def qe_train(session: Session, command: str) -> None:
    session.bash(f"{command} {shlex.join(QE_TRAIN_OVERRIDES)}")


def page_curl(session: Session, command: str) -> None:
    """curl against the server running, else against the page's server."""
    if session.server is None:
        assert isinstance(session, Project) and session.page_server, "no server for this curl line"
        serve(session, session.page_server)
    curl(session, command)


def export_variable(session: Session, command: str) -> None:
    """`export NAME=...`: NAME keeps its value for the page's later commands."""
    name = re.fullmatch(r"export ([A-Za-z_]\w*)=.*", command)
    assert name, command
    session.env[name.group(1)] = session.bash(f'{command} && printf %s "${name.group(1)}"').stdout
    assert session.env[name.group(1)], f"`{command}` set nothing"


def newest_sweep(session: Session, command: str) -> None:
    """`<date>` is the newest sweep directory of its run."""
    parent = re.search(r"(multirun/[^ ]+)/<date>", command)
    assert parent, command
    sweeps = (session.root / parent.group(1)).iterdir()
    dated = sorted(path.name for path in sweeps if re.match(r"\d{4}-", path.name))
    assert dated, f"no sweep directory in {parent.group(1)}"
    session.bash(command.replace("<date>", dated[-1]))


def kept_toy_corpus(session: Session, command: str) -> None:
    """seq2seq-prepare as written; the Bible recipe must have found its (toy) corpus already built."""
    session.bash(command)
    lines = (session.root / "data" / "bible_en_es" / "train.en").read_text(encoding="utf-8").count("\n")
    assert lines == TRAIN_PAIRS, f"`{command}` rebuilt the corpus ({lines} training lines)"


def argos(session: Session, command: str) -> None:
    """An Argos Translate command as written, with argostranslate's packages, settings and caches (the
    XDG folders it reads when imported) in the project directory rather than the user's home."""
    home = session.root / "argos-home"
    session.env.update({f"XDG_{kind.upper()}_HOME": str(home / kind) for kind in ("data", "config", "cache")})
    session.bash(command)


def server_help(session: Session, command: str) -> None:
    """A server that runs until stopped (TensorBoard): `--help` only."""
    session.bash(f"{words(command)[0]} --help")

"""seq2seq.corpus_translation called from Python, without Hydra: back-translation and distillation write,
file for file, the corpus (and fingerprint) the commands write for the same model and settings; the
typed settings have the commands' defaults and refuse a mistake when built; back-translation's
src_lang / tgt_lang are the reverse model's direction, the run that names them backwards (their old
meaning) is refused, and the equivalent of an old command line writes the files it wrote.

The commands run in this process on the config Hydra composes (tests/in_process.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from commands import error_line
from hydra import compose, initialize_config_dir
from in_process import run_command
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq import Translator, UserError
from seq2seq.cli.backtranslate import backtranslate as backtranslate_command
from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.distill import distill as distill_command
from seq2seq.corpus_translation import (
    BacktranslateSettings,
    DistillSettings,
    ScoreFilter,
    backtranslate,
    distill,
)

LINES = [*sentences(4, seed=5), "", *sentences(3, seed=6)]  # 8 lines, one blank
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12", "chunk_lines=3"]  # random models rarely stop
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # the Translator's side of SHORT
TIMED = {"report.json"}  # besides the chunks' done markers, which hold their seconds too


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An es->en reverse model and an en->es teacher, their languages recorded as training records them."""
    tokenizer, folder = tiny_tokenizer(), tmp_path_factory.mktemp("models")
    return {
        name: save_tiny_checkpoint(folder / f"{name}.pt", tiny_model(tokenizer.vocab_size, seed=seed,
                                   sharpness=4.0, max_positions=64), tokenizer, step=3,
                                   config={"data": {"src_lang": src, "tgt_lang": tgt}})
        for name, seed, src, tgt in (("es-en", 0, "es", "en"), ("en-es", 1, "en", "es"))
    }  # fmt: skip


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "text.txt"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    return path


def command(
    function: Callable[[Any], Any], name: str, checkpoint: Path, source: Path, out: Path, *overrides: str
) -> subprocess.CompletedProcess:
    """The command's function in this process -> its exit code and stderr, as a finished subprocess."""
    arguments = [f"checkpoint={checkpoint}", f"input={source}", f"output_dir={out}", *SHORT, *overrides]
    return run_command(function, name, *arguments)


def written(out: Path) -> dict[str, bytes]:
    """Every file a run leaves in `out` but those that hold timings (and the lock, which names the
    process), by relative path."""
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        timed = path.name in TIMED or (path.parent.name == "chunks" and path.suffix == ".json")
        if not timed and not path.name.endswith(".lock"):
            files[path.relative_to(out).as_posix()] = path.read_bytes()
    return files


def test_backtranslate_from_python_writes_the_commands_files(models, text, tmp_path):
    result = command(backtranslate_command, "backtranslate", models["es-en"], text, tmp_path / "cli")
    assert result.returncode == 0, result.stderr[-3000:]
    reverse = Translator.from_checkpoint(models["es-en"], options=OPTIONS)
    settings = BacktranslateSettings(checkpoint=models["es-en"], input=text, output_dir=tmp_path / "py",
                                     chunk_lines=3)  # fmt: skip
    report = backtranslate(reverse, settings)
    files = written(tmp_path / "py")
    assert files == written(tmp_path / "cli")
    assert {"bt.en", "bt.es", "backtranslate.json", "chunks/000000.en"} <= set(files)
    assert files["bt.es"].decode().split("\n")[:2] == LINES[:2]  # the input lines: the real side
    assert report["pairs"] == json.loads((tmp_path / "cli" / "report.json").read_text())["pairs"] > 0
    assert report["outputs"] == {"src": str(tmp_path / "py" / "bt.en"), "tgt": str(tmp_path / "py" / "bt.es")}


def test_distill_from_python_writes_the_commands_files(models, text, tmp_path):
    result = command(distill_command, "distill", models["en-es"], text, tmp_path / "cli",
                     "filter.drop_fraction=0.5")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    teacher = Translator.from_checkpoint(models["en-es"], options=OPTIONS)
    settings = DistillSettings(checkpoint=models["en-es"], input=text, output_dir=tmp_path / "py",
                               chunk_lines=3, filter=ScoreFilter(drop_fraction=0.5))  # fmt: skip
    report = distill(teacher, settings)
    files = written(tmp_path / "py")
    assert files == written(tmp_path / "cli")
    assert {"distill.en", "distill.es", "distill.scores", "dropped.tsv", "distill.json"} <= set(files)
    assert report["filter"] == json.loads((tmp_path / "cli" / "report.json").read_text())["filter"]
    assert report["filter"]["dropped"] == report["pairs"] // 2 > 0  # floor(0.5 * pairs)


def test_an_old_command_lines_equivalent_writes_its_files_and_resumes_its_directory(models, text, tmp_path):
    """An older version's src_lang=xx tgt_lang=yy (xx: the synthetic side, yy: the input's) is now
    src_lang=yy tgt_lang=xx: the same bt.xx (translations) and bt.yy (lines), chunk files and
    fingerprint, whose corpus sides {"src": "xx", "tgt": "yy"} are what the older version recorded, so an
    output_dir it left resumes."""
    result = command(backtranslate_command, "backtranslate", models["es-en"], text, tmp_path / "bt",
                     "src_lang=yy", "tgt_lang=xx", "decode=greedy")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    greedy = Translator.from_checkpoint(models["es-en"], options={**OPTIONS, "beam_size": 1})
    given = [line for line in LINES if line]
    pairs = [(t.text, line) for t, line in zip(greedy.translate(given), given) if t.text]
    files = written(tmp_path / "bt")
    assert list(zip(files["bt.xx"].decode().splitlines(), files["bt.yy"].decode().splitlines())) == pairs
    assert "chunks/000000.xx" in files and "chunks/000000.yy" in files
    assert json.loads(files["backtranslate.json"])["settings"]["langs"] == {"src": "xx", "tgt": "yy"}


@pytest.mark.parametrize(
    "languages",
    [["src_lang=en", "tgt_lang=es"], ["src_lang=en"], ["tgt_lang=es"]],
    ids=["both", "src", "tgt"],
)
def test_languages_given_backwards_for_the_reverse_model_are_refused(models, text, tmp_path, languages):
    """The old meaning (the corpus's sides) names an es->en model's languages backwards: one line that
    says the meaning changed and gives the fix, before anything is written."""
    line = error_line(command(backtranslate_command, "backtranslate", models["es-en"], text, tmp_path / "bt",
                              *languages))  # fmt: skip
    named = " ".join(languages)
    assert f"{named} names the reverse model's languages backwards (it translates es->en)" in line
    assert "now mean the languages the model reads and writes" in line
    assert line.endswith("pass src_lang=es tgt_lang=en, or neither")
    assert not (tmp_path / "bt").exists()
    reverse = Translator.from_checkpoint(models["es-en"], options=OPTIONS)
    settings = BacktranslateSettings(models["es-en"], text, tmp_path / "py", src_lang="en", tgt_lang="es")
    with pytest.raises(UserError, match="backwards"):
        backtranslate(reverse, settings)


def test_the_model_direction_named_is_not_refused(models, text, tmp_path):
    result = command(backtranslate_command, "backtranslate", models["es-en"], text, tmp_path / "bt",
                     "src_lang=es", "tgt_lang=en")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "bt" / "bt.en").is_file() and (tmp_path / "bt" / "bt.es").is_file()


def composed(name: str) -> Any:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(name, overrides=["checkpoint=a.pt", "input=b", "output_dir=c"])


@pytest.mark.parametrize(
    ("name", "kind"), [("backtranslate", BacktranslateSettings), ("distill", DistillSettings)]
)
def test_the_settings_defaults_are_the_commands(name, kind):
    cfg = composed(name)
    settings = kind(checkpoint="a.pt", input="b", output_dir="c")
    for key in ("src_lang", "tgt_lang", "chunk_lines", "max_tokens", "encoding_errors", "force", "precision",
                "quantization"):  # fmt: skip
        assert getattr(settings, key) == cfg[key], key
    assert cfg.progress_bar == "auto" and settings.progress_bar is None
    if name == "distill":
        assert settings.filter == ScoreFilter(**cfg.filter)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: BacktranslateSettings(("a.pt", "b.pt"), "in", "out"), "takes one reverse model"),
        (lambda: DistillSettings((), "in", "out"), "checkpoint=[] names no model"),
        (lambda: BacktranslateSettings("a.pt", "in", "out", chunk_lines=0), "chunk_lines=0"),
        (lambda: BacktranslateSettings("a.pt", "in", "out", src_lang="e n"), "src_lang='e n' is not a"),
        (lambda: BacktranslateSettings("a.pt", "in", "out", encoding_errors="x"), "encoding_errors='x'"),
        (lambda: BacktranslateSettings("a.pt", "in", "out", force="yes"), "force='yes'"),
        (lambda: BacktranslateSettings("a.pt", "in", "out", precision="fp16"), "precision='fp16'"),
        (lambda: DistillSettings("a.pt", "in", "out", tgt_lang="scores"), "tgt_lang=scores"),
        (lambda: ScoreFilter(drop_fraction=1.0), "filter.drop_fraction=1.0"),
        (lambda: ScoreFilter(min_score=float("nan")), "filter.min_score=nan"),
    ],
)  # fmt: skip
def test_a_mistake_in_the_settings_is_one_line_when_they_are_built(build, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")) as raised:
        build()
    assert "\n" not in str(raised.value)

"""seq2seq-prepare on a user's own files: the report, and one clean error line for each bad input."""

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.prepare import prepare


def _run_cli(cwd: Path, *overrides: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "seq2seq.cli.prepare",
        "data=parallel_files",
        "data.dir=corpus",
        "data.src_lang=en",
        "data.tgt_lang=es",
        "hydra/job_logging=none",
        *overrides,
    ]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def _corpus(tmp_path: Path, **files: bytes) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    defaults = {
        "train.en": b"one\ntwo\n",
        "train.es": b"uno\ndos\n",
        "dev.en": b"three\n",
        "dev.es": b"tres\n",
    }
    for name, data in {**defaults, **files}.items():
        (corpus / name.replace("_", ".")).write_bytes(data)
    return corpus


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(config_name="prepare", overrides=list(overrides))


def test_user_files_are_checked_and_reported(tmp_path, monkeypatch):
    _corpus(tmp_path, train_en=b"one two\n" + b"x" * 100_000 + b"\n", train_es=b"uno dos\ny\n")
    monkeypatch.chdir(tmp_path)
    cfg = _compose("data=parallel_files", "data.dir=corpus", "data.src_lang=en", "data.tgt_lang=es")
    report = prepare(cfg)
    assert report["train"] == {
        "pairs": 2,
        "empty_pairs": 0,
        "src_words": 3,
        "tgt_words": 3,
        "longest_line_words": 2,
    }
    assert report["dev"]["pairs"] == 1 and "test" not in report


def test_tsv_recipe_writes_the_files_it_then_checks(tmp_path, monkeypatch):
    (tmp_path / "train.tsv").write_text("hello\thola\nbye\tadiós\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("yes\tsí\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cfg = _compose(
        "data=parallel_tsv",
        "data.dir=out",
        "data.src_lang=en",
        "data.tgt_lang=es",
        "data.tsv.train=train.tsv",
        "data.tsv.dev=dev.tsv",
    )
    report = prepare(cfg)
    assert (tmp_path / "out" / "train.es").read_text(encoding="utf-8") == "hola\nadiós\n"
    assert report["train"]["pairs"] == 2 and report["dev"]["pairs"] == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"train_es": b"uno\n"},
            "corpus/train.en has 2 lines but {cwd}/corpus/train.es has 1; parallel files",
        ),
        ({"dev_es": b"tr\xe9s\n"}, "corpus/dev.es:1: invalid UTF-8 (byte 0xe9 at column 3); fix the file or"),
        ({"train_en": b""}, "corpus/train.en is empty; a corpus file needs one sentence per line"),
    ],
    ids=["mismatched-lines", "invalid-utf8", "empty-file"],
)
def test_bad_input_gives_one_error_line_and_exit_code_2(tmp_path, files, message):
    _corpus(tmp_path, **files)
    result = _run_cli(tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1 and message.format(cwd=tmp_path) in error_lines[0]


@pytest.mark.slow
def test_missing_corpus_is_one_error_line(tmp_path):
    result = _run_cli(tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        f"error: {tmp_path}/corpus/train.en: no such file; check the path in the data config" in result.stderr
    )

"""seq2seq-backtranslate: its pairs are the Translator's translations of the non-blank monolingual lines
(synthetic source) beside those lines (target), in order, with either engine; a run killed with SIGKILL
and started again writes the bytes an uninterrupted run writes, with sampling too; a chunk that is not
complete is redone; a rerun with other settings, missing files and a held directory are one-line errors.

The command's function runs in this process on the config Hydra composes (a subprocess costs a Python
start-up); only the run that must die by SIGKILL is a subprocess.
"""

from __future__ import annotations

import gzip
import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from commands import ENV, error_line
from in_process import run_command
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.cli.backtranslate import backtranslate
from seq2seq.corpus_translation import output_dir as translated_corpus_dir
from seq2seq.corpus_translation.chunks import chunk_seed
from seq2seq.corpus_translation.input_lines import count_lines
from seq2seq.files import this_host

LINES = [*sentences(4, seed=5), "", *sentences(3, seed=6), "   ", *sentences(3, seed=7)]  # 12 lines
GIVEN = [line for line in LINES if line.strip()]
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12"]  # random models rarely stop by themselves
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # the Translator's side of SHORT
SAMPLE = ["decode=sample", "decode.top_k=10", "decode.seed=3"]
LANGUAGES = {"data": {"src_lang": "es", "tgt_lang": "en"}}  # the reverse model: es -> en

# Runs seq2seq-backtranslate with the arguments after the first, killing itself with SIGKILL (no handler,
# no cleanup: as `kill -9` does) as soon as the chunk the first argument names is saved.
KILL_AFTER_CHUNK = """
import os, runpy, signal, sys
from seq2seq.corpus_translation import output_dir as translated_corpus_dir
index = int(sys.argv.pop(1))
save = translated_corpus_dir.save_chunk
def save_then_die(out, stats, pairs):
    save(out, stats, pairs)
    if stats.index == index:
        os.kill(os.getpid(), signal.SIGKILL)
translated_corpus_dir.save_chunk = save_then_die
runpy.run_module("seq2seq.cli.backtranslate", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    path = tmp_path_factory.mktemp("model") / "es-en.pt"
    return save_tiny_checkpoint(path, model, tokenizer, step=3, config=LANGUAGES)


@pytest.fixture(scope="module")
def monolingual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "mono.es"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    return path


def settings(checkpoint: Path, source: Path, out: Path, *overrides: str) -> list[str]:
    return [f"checkpoint={checkpoint}", f"input={source}", f"output_dir={out}", "chunk_lines=3", *SHORT,
            *overrides]  # fmt: skip


def run(checkpoint: Path, source: Path, out: Path, *overrides: str) -> subprocess.CompletedProcess:
    """The command's function in this process -> its exit code and stderr, as a finished subprocess."""
    return run_command(backtranslate, "backtranslate", *settings(checkpoint, source, out, *overrides))


def corpus(out: Path, src: str = "en", tgt: str = "es") -> tuple[bytes, bytes]:
    return (out / f"bt.{src}").read_bytes(), (out / f"bt.{tgt}").read_bytes()


def lines_of(data: bytes) -> list[str]:
    return data.decode("utf-8").split("\n")[:-1]


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_pairs_are_the_translators_output_beside_the_lines(checkpoint, monolingual, tmp_path, decode, caplog):
    with caplog.at_level(logging.INFO, logger="seq2seq.backtranslate"):
        result = run(checkpoint, monolingual, tmp_path / "bt", f"decode={decode}")
    assert result.returncode == 0, result.stderr[-3000:]
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    expected = [t.text for t in translator.translate(GIVEN, beam_size=1 if decode == "greedy" else None)]
    pairs = [(source, target) for source, target in zip(expected, GIVEN) if source]
    sources, targets = corpus(tmp_path / "bt")  # the languages: the checkpoint's, swapped
    assert list(zip(lines_of(sources), lines_of(targets))) == pairs
    report = json.loads((tmp_path / "bt" / "report.json").read_text())
    assert (report["lines"], report["empty_lines"], report["pairs"]) == (len(LINES), 2, len(pairs))
    assert report["chunks"] == 4 and report["engine"] == "torch" and report["sentences_per_second"] > 0
    assert sorted(p.name for p in (tmp_path / "bt" / "chunks").iterdir())[:3] == [
        "000000.en", "000000.es", "000000.json",
    ]  # fmt: skip
    assert "skipped 2 blank input lines" in caplog.text
    assert "chunk 4/4 done: 12/12 lines" in caplog.text and "ETA" in caplog.text  # no bar: a line per chunk


@pytest.mark.slow
@pytest.mark.parametrize("decode", [["decode=greedy"], SAMPLE], ids=["greedy", "sample"])
def test_a_run_killed_after_a_chunk_resumes_to_the_uninterrupted_bytes(
    checkpoint, monolingual, tmp_path, decode
):
    uninterrupted = run(checkpoint, monolingual, tmp_path / "whole", *decode)
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    arguments = settings(checkpoint, monolingual, tmp_path / "bt", *decode)
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_CHUNK, "1", *arguments], cwd=tmp_path, env=ENV, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    chunks = tmp_path / "bt" / "chunks"
    assert sorted(p.name for p in chunks.glob("*.json")) == ["000000.json", "000001.json"]
    assert not (tmp_path / "bt" / "bt.en").exists()
    resumed = run(checkpoint, monolingual, tmp_path / "bt", *decode)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((tmp_path / "bt" / "report.json").read_text())["chunks_resumed"] == 2
    assert corpus(tmp_path / "bt") == corpus(tmp_path / "whole")
    assert len(lines_of(corpus(tmp_path / "bt")[1])) == len(GIVEN)  # no line lost or repeated


@pytest.mark.slow
def test_a_chunk_without_its_marker_or_of_another_size_is_redone(checkpoint, monolingual, tmp_path):
    assert run(checkpoint, monolingual, tmp_path / "bt", *SAMPLE).returncode == 0
    whole = corpus(tmp_path / "bt")
    chunks = tmp_path / "bt" / "chunks"
    (chunks / "000001.json").unlink()  # killed between its files' renames and its marker's
    (chunks / "000001.en").write_text("half a chunk\n", encoding="utf-8")
    with open(chunks / "000002.es", "ab") as damaged:  # a marker whose files are not what it says
        damaged.write(b"a line nobody translated\n")
    finished = subprocess.Popen(["true"])
    finished.wait()
    dead = chunks / f".000003.en.{this_host()}.{finished.pid}.abc.tmp"  # a killed writer's temporary
    alive = chunks / ".000003.en.otherhost.1.abc.tmp"  # another host's writer may still be at work
    for temporary in (dead, alive):
        temporary.write_text("", encoding="utf-8")
    result = run(checkpoint, monolingual, tmp_path / "bt", *SAMPLE)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "bt" / "report.json").read_text())["chunks_resumed"] == 2
    assert corpus(tmp_path / "bt") == whole
    assert not dead.exists() and alive.exists()


def test_a_rerun_with_other_settings_is_refused_unless_forced(checkpoint, monolingual, tmp_path):
    assert run(checkpoint, monolingual, tmp_path / "bt", *SAMPLE).returncode == 0
    refused = run(checkpoint, monolingual, tmp_path / "bt", *SAMPLE, "decode.seed=4")
    line = error_line(refused)
    assert "other settings (decode.seed: 3 -> 4)" in line and "new output_dir, or force=true" in line
    assert "chunk_lines: 3 -> 4" in error_line(run(checkpoint, monolingual, tmp_path / "bt", *SAMPLE,
                                                   "chunk_lines=4"))  # fmt: skip
    forced = run(checkpoint, monolingual, tmp_path / "bt", *SAMPLE, "decode.seed=4", "force=true")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert json.loads((tmp_path / "bt" / "report.json").read_text())["chunks_resumed"] == 0
    assert json.loads((tmp_path / "bt" / "backtranslate.json").read_text())["settings"]["decode"]["seed"] == 4


def test_missing_files_and_a_held_directory_are_one_line_errors(checkpoint, monolingual, tmp_path):
    missing = run(checkpoint, tmp_path / "no.es", tmp_path / "bt")
    assert "input=" in error_line(missing) and "does not exist" in error_line(missing)
    missing = run(tmp_path / "no.pt", monolingual, tmp_path / "bt")
    assert "checkpoint=" in error_line(missing) and "reverse model" in error_line(missing)
    (tmp_path / "file").write_text("", encoding="utf-8")
    assert "output_dir=" in error_line(run(checkpoint, monolingual, tmp_path / "file"))
    nameless = save_tiny_checkpoint(tmp_path / "nameless.pt", tiny_model(64), tiny_tokenizer(), step=1)
    assert "pass src_lang=" in error_line(run(nameless, monolingual, tmp_path / "bt"))
    with translated_corpus_dir.holding(tmp_path / "bt"):
        assert "is in use by process" in error_line(run(checkpoint, monolingual, tmp_path / "bt"))
    assert not (tmp_path / "bt" / "chunks").exists()


def test_the_ctranslate2_engine_in_int8_gives_aligned_pairs(checkpoint, monolingual, tmp_path):
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    result = run(exported, monolingual, tmp_path / "bt", "decode=greedy", "quantization=int8")
    assert result.returncode == 0, result.stderr[-3000:]
    theirs = Translator.from_checkpoint(exported, quantization="int8", options=OPTIONS)
    expected = [t.text for t in theirs.translate(GIVEN, beam_size=1)]
    sources, targets = corpus(tmp_path / "bt")  # the languages from the export's checkpoint
    assert list(zip(lines_of(sources), lines_of(targets))) == [(s, t) for s, t in zip(expected, GIVEN) if s]
    assert json.loads((tmp_path / "bt" / "report.json").read_text())["engine"] == "ctranslate2"


def test_languages_can_be_named_and_lines_are_counted_as_the_reader_reads_them(checkpoint, tmp_path):
    source = tmp_path / "mono.txt"
    source.write_bytes(b"\xef\xbb\xbfgod created light\r\n\nday and night")  # BOM, CRLF, no final newline
    assert count_lines(source) == 3
    named = ["src_lang=yy", "tgt_lang=xx", "chunk_lines=2", "progress_bar=true"]  # reads yy, writes xx
    result = run(checkpoint, source, tmp_path / "bt", *named)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "back-translate: 100%" in result.stderr and "sent/s" in result.stderr
    assert lines_of(corpus(tmp_path / "bt", "xx", "yy")[1]) == ["god created light", "day and night"]


def test_invalid_utf8_names_the_line_and_a_rerun_with_replace_finishes(checkpoint, tmp_path):
    source = tmp_path / "mono.es"
    source.write_bytes("".join(line + "\n" for line in GIVEN[:4]).encode() + b"\xff bad\n" + b"day\n")
    refused = error_line(run(checkpoint, source, tmp_path / "bt"))
    assert "mono.es:5: invalid UTF-8" in refused and "pass encoding_errors=replace" in refused
    result = run(checkpoint, source, tmp_path / "bt", "encoding_errors=replace")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "bt" / "report.json").read_text())
    assert (report["chunks_resumed"], report["replaced_lines"]) == (1, 1)
    assert report["pairs"] + report["empty_translations"] == 6  # every line translated (some emptily)


@pytest.mark.parametrize("damage", ["not gzip", "truncated"])
def test_a_damaged_gz_input_is_one_line_and_writes_nothing(checkpoint, tmp_path, damage):
    """A .gz input that is not gzip, or ends early, stops the run with one line before anything is
    written, so a rerun with the repaired file starts without force=true."""
    source, whole = tmp_path / "mono.es.gz", gzip.compress("".join(line + "\n" for line in LINES).encode())
    source.write_bytes(b"god created light\n" if damage == "not gzip" else whole[: len(whole) // 2])
    refused = error_line(run(checkpoint, source, tmp_path / "bt"))
    assert "mono.es.gz: cannot be read" in refused and "check or re-download the file" in refused
    assert not (tmp_path / "bt").exists()
    source.write_bytes(whole)
    result = run(checkpoint, source, tmp_path / "bt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert lines_of(corpus(tmp_path / "bt")[1]) == [line for line in GIVEN]


def test_each_chunk_has_its_own_seed() -> None:
    assert chunk_seed(3, 0) == chunk_seed(3, 0)
    assert len({chunk_seed(seed, index) for seed in range(3) for index in range(100)}) == 300


def test_a_multilingual_reverse_model_reads_and_writes_the_corpus_suffixes(monolingual, tmp_path):
    """Our own multilingual model (en, es, fr) back-translates input named by its language: src_lang= (the
    input's) is what it reads, tgt_lang= what it writes; a suffix that is none of its codes is refused."""
    from multilingual_model import own_multilingual_checkpoint

    checkpoint = own_multilingual_checkpoint(tmp_path / "both.pt")
    result = run(checkpoint, monolingual, tmp_path / "bt", "src_lang=en", "tgt_lang=fr")
    assert result.returncode == 0, result.stderr[-3000:]
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    expected = [t.text for t in translator.translate(GIVEN, src_lang="en", tgt_lang="fr")]
    sources, targets = corpus(tmp_path / "bt", "fr", "en")
    assert list(zip(lines_of(sources), lines_of(targets))) == [(s, t) for s, t in zip(expected, GIVEN) if s]
    assert expected != [t.text for t in translator.translate(GIVEN, src_lang="en", tgt_lang="es")]
    refused = run(checkpoint, monolingual, tmp_path / "de", "src_lang=en", "tgt_lang=de")
    assert (
        refused.returncode == 2
        and "the corpus suffixes en -> de are not its codes (en, es, fr)" in refused.stderr
    )

"""seq2seq-distill: its corpus is, line for line, what seq2seq-translate writes for the same teacher and
search, with the teacher's score of each translation beside it; an ensemble teacher is the Translator's
ensemble; a run killed with SIGKILL resumes to the bytes of an uninterrupted run; another teacher or
search is refused by name; the filter drops exactly the pairs the scores say, without translating again.

The command runs in this process on the config Hydra composes, as in test_backtranslate.py (whose
chunk machinery it shares), and so does seq2seq-translate, the reference; only the run killed by
SIGKILL is a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from commands import ENV, error_line
from hydra import compose, initialize_config_dir
from in_process import translate_lines
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.cli.distill import distill
from seq2seq.cli.distill_filter import ScoreFilter, dropped_pairs, read_filter
from seq2seq.cli.launch import config_dir
from seq2seq.errors import UserError

LINES = [*sentences(5, seed=11), "", *sentences(6, seed=12)]  # 12 lines, one blank
GIVEN = [line for line in LINES if line]
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12"]  # random models rarely stop by themselves
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # the Translator's side of SHORT
LANGUAGES = {"data": {"src_lang": "en", "tgt_lang": "es"}}

KILL_AFTER_CHUNK = """
import os, runpy, signal, sys
from seq2seq.cli import translated_corpus_dir
index = int(sys.argv.pop(1))
save = translated_corpus_dir.save_chunk
def save_then_die(out, stats, rows):
    save(out, stats, rows)
    if stats.index == index:
        os.kill(os.getpid(), signal.SIGKILL)
translated_corpus_dir.save_chunk = save_then_die
runpy.run_module("seq2seq.cli.distill", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def teachers(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tokenizer, folder = tiny_tokenizer(), tmp_path_factory.mktemp("teachers")
    return [
        save_tiny_checkpoint(folder / f"teacher{seed}.pt", tiny_model(tokenizer.vocab_size, seed=seed,
                             sharpness=4.0, max_positions=64), tokenizer, step=3, config=LANGUAGES)
        for seed in (0, 1)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "train.en"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    return path


def settings(teacher: Path | list[Path], source: Path, out: Path, *overrides: str) -> list[str]:
    named = f"[{','.join(str(p) for p in teacher)}]" if isinstance(teacher, list) else str(teacher)
    return [
        f"checkpoint={named}",
        f"input={source}",
        f"output_dir={out}",
        "chunk_lines=4",
        *SHORT,
        *overrides,
    ]


def run(teacher: Path | list[Path], source: Path, out: Path, *overrides: str) -> subprocess.CompletedProcess:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("distill", overrides=settings(teacher, source, out, *overrides))
    stderr, code = io.StringIO(), 0
    with contextlib.redirect_stderr(stderr):
        try:
            distill(cfg)
        except SystemExit as stop:
            code = int(stop.code or 0)
    return subprocess.CompletedProcess([], code, "", stderr.getvalue())


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def corpus(out: Path) -> tuple[bytes, ...]:
    return tuple((out / f"distill.{suffix}").read_bytes() for suffix in ("en", "es", "scores"))


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def test_the_corpus_is_what_seq2seq_translate_writes_with_the_teachers_scores(teachers, sources, tmp_path):
    result = run(teachers[0], sources, tmp_path / "d")
    assert result.returncode == 0, result.stderr[-3000:]
    code, stderr, hypotheses = translate_lines(tmp_path, LINES, f"checkpoint={teachers[0]}", *SHORT)
    assert code == 0, stderr[-3000:]
    by_line = dict(zip(LINES, hypotheses))  # seq2seq-translate: beam 5 by default too
    expected = [(line, by_line[line]) for line in GIVEN if by_line[line]]
    assert (
        list(zip(lines_of(tmp_path / "d" / "distill.en"), lines_of(tmp_path / "d" / "distill.es")))
        == expected
    )
    scored = Translator.from_checkpoint(teachers[0], options=OPTIONS).translate(GIVEN, confidence=True)
    wanted = [t.mean_log_prob for t in scored if t.text]  # batched otherwise: equal to float rounding
    assert [float(s) for s in lines_of(tmp_path / "d" / "distill.scores")] == pytest.approx(wanted, abs=1e-5)
    assert all(-30 < score < 0 for score in wanted)
    done = report(tmp_path / "d")
    assert (done["lines"], done["empty_lines"], done["pairs"], done["chunks"]) == (12, 1, len(expected), 3)
    assert done["filter"]["dropped"] == 0 and (tmp_path / "d" / "dropped.tsv").read_text() == ""
    assert json.loads((tmp_path / "d" / "distill.json").read_text())["settings"]["decode"]["beam_size"] == 5


def test_an_ensemble_teacher_is_the_translators_ensemble(teachers, sources, tmp_path):
    result = run(teachers, sources, tmp_path / "d", "decode=greedy")
    assert result.returncode == 0, result.stderr[-3000:]
    ensemble = Translator.from_checkpoint([str(p) for p in teachers], options=OPTIONS)
    expected = [t for t in ensemble.translate(GIVEN, beam_size=1, confidence=True) if t.text]
    assert lines_of(tmp_path / "d" / "distill.es") == [t.text for t in expected]
    scores = [float(s) for s in lines_of(tmp_path / "d" / "distill.scores")]
    assert scores == pytest.approx([t.mean_log_prob for t in expected], abs=1e-5)
    assert (
        len(json.loads((tmp_path / "d" / "distill.json").read_text())["settings"]["checkpoint_sha256"]) == 2
    )


@pytest.mark.slow
def test_a_run_killed_after_a_chunk_resumes_to_the_uninterrupted_bytes(teachers, sources, tmp_path):
    assert run(teachers[0], sources, tmp_path / "whole").returncode == 0
    arguments = settings(teachers[0], sources, tmp_path / "d")
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_CHUNK, "0", *arguments], cwd=tmp_path, env=ENV, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "d" / "chunks").glob("*.json")) == ["000000.json"]
    assert not (tmp_path / "d" / "distill.es").exists()
    resumed = run(teachers[0], sources, tmp_path / "d")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert report(tmp_path / "d")["chunks_resumed"] == 1
    assert corpus(tmp_path / "d") == corpus(tmp_path / "whole")


def test_another_teacher_or_search_is_refused_by_name(teachers, sources, tmp_path):
    assert run(teachers[0], sources, tmp_path / "d").returncode == 0
    line = error_line(run(teachers[1], sources, tmp_path / "d"))
    assert "holds a distillation with other settings (checkpoint_sha256:" in line and "force=true" in line
    assert "decode.beam_size: 5 -> 3" in error_line(
        run(teachers[0], sources, tmp_path / "d", "decode.beam_size=3")
    )
    forced = run(teachers[1], sources, tmp_path / "d", "force=true")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert report(tmp_path / "d")["chunks_resumed"] == 0


def test_the_filter_drops_exactly_the_pairs_the_scores_say_without_translating_again(
    teachers, sources, tmp_path, caplog
):
    assert run(teachers[0], sources, tmp_path / "d").returncode == 0
    every = list(zip(*(lines_of(tmp_path / "d" / f"distill.{s}") for s in ("en", "es", "scores"))))
    scores = [float(row[2]) for row in every]
    lowest = set(np.argsort(scores, kind="stable")[: math.floor(0.25 * len(scores))].tolist())
    median = sorted(scores)[len(scores) // 2]
    for rule, drops in [
        ("filter.drop_fraction=0.25", lambda i: i in lowest),
        (f"filter.min_score={median}", lambda i: scores[i] < median),
    ]:
        with caplog.at_level(logging.INFO, logger="seq2seq.distill"):
            result = run(teachers[0], sources, tmp_path / "d", rule)
        assert result.returncode == 0, result.stderr[-3000:]
        kept = [row for i, row in enumerate(every) if not drops(i)]
        assert 0 < len(kept) < len(every)
        assert list(zip(*(lines_of(tmp_path / "d" / f"distill.{s}") for s in ("en", "es", "scores")))) == kept
        dropped = [tuple(line.split("\t")) for line in lines_of(tmp_path / "d" / "dropped.tsv")]
        assert dropped == [(row[2], row[0], row[1]) for i, row in enumerate(every) if drops(i)]
        done = report(tmp_path / "d")
        assert done["chunks_resumed"] == done["chunks"] == 3  # the filter changed; nothing was translated
        assert (done["filter"]["kept"], done["filter"]["dropped"]) == (len(kept), len(every) - len(kept))
    assert "the filter dropped" in caplog.text


def test_dropped_pairs_takes_the_lowest_scores_earlier_lines_first_among_equals():
    scores = np.array([-1.0, -3.0, -2.0, -3.0, -0.5, -2.0])

    def dropped(**rule: float) -> list[int]:
        return np.flatnonzero(dropped_pairs(scores, ScoreFilter(**rule))).tolist()

    assert dropped(drop_fraction=0.5) == [1, 2, 3]  # both -3 and the earlier -2
    assert dropped(drop_fraction=0.2) == [1]  # floor(1.2) = 1 pair: the earlier -3
    assert dropped(min_score=-1.5) == [1, 2, 3, 5]
    assert dropped(drop_fraction=0.2, min_score=-2.5) == [1, 3]
    assert dropped() == [] and not ScoreFilter().active
    assert dropped_pairs(np.zeros(0), ScoreFilter(drop_fraction=0.5)).tolist() == []


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"drop_fraction": 1.5}, "filter.drop_fraction"),
        ({"drop_fraction": -0.1}, "filter.drop_fraction"),
        ({"min_score": "high"}, "filter.min_score"),
        ({"fraction": 0.1}, "filter has unknown keys ['fraction']"),
    ],
)
def test_a_bad_filter_is_one_line(setting, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_filter(setting)


def test_bad_settings_are_one_line_errors_before_anything_is_written(teachers, sources, tmp_path):
    assert "src_lang=scores" in error_line(run(teachers[0], sources, tmp_path / "d", "src_lang=scores"))
    assert "filter.drop_fraction" in error_line(
        run(teachers[0], sources, tmp_path / "d", "filter.drop_fraction=2")
    )
    missing = error_line(run([teachers[0], tmp_path / "no.pt"], sources, tmp_path / "d"))
    assert "no.pt does not exist" in missing and "pass the teacher" in missing
    assert "decode.nbest=2" in error_line(run(teachers[0], sources, tmp_path / "d", "decode.nbest=2"))
    assert not (tmp_path / "d").exists()


def test_an_exported_teacher_in_int8_gives_its_own_translations_and_scores(teachers, sources, tmp_path):
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    exported = export_ctranslate2(teachers[0], tmp_path / "ct2")
    result = run(exported, sources, tmp_path / "d", "quantization=int8")
    assert result.returncode == 0, result.stderr[-3000:]
    engine = Translator.from_checkpoint(exported, quantization="int8", options=OPTIONS)
    expected = [t for t in engine.translate(GIVEN, confidence=True) if t.text]
    assert lines_of(tmp_path / "d" / "distill.es") == [t.text for t in expected]  # languages from the export
    scores = [float(s) for s in lines_of(tmp_path / "d" / "distill.scores")]
    # int8 scales each batch's activations by that batch's range: other batches, scores off by ~1e-3
    assert scores == pytest.approx([t.mean_log_prob for t in expected], abs=1e-2)
    assert report(tmp_path / "d")["engine"] == "ctranslate2"


def test_a_multilingual_teacher_translates_between_the_corpus_suffixes(sources, tmp_path):
    """Our own multilingual teacher (en, es, fr) reads src_lang= and writes tgt_lang=, the corpus's
    suffixes; a suffix that is none of its codes is refused."""
    from multilingual_model import own_multilingual_checkpoint

    teacher = own_multilingual_checkpoint(tmp_path / "both.pt")
    result = run(teacher, sources, tmp_path / "out", "src_lang=en", "tgt_lang=fr")
    assert result.returncode == 0, result.stderr[-3000:]
    expected = [t.text for t in Translator.from_checkpoint(teacher, options=OPTIONS).translate(GIVEN, src_lang="en", tgt_lang="fr")]
    kept = dict(zip(lines_of(tmp_path / "out" / "distill.en"), lines_of(tmp_path / "out" / "distill.fr")))
    assert kept and all(kept[source] == target for source, target in zip(GIVEN, expected) if source in kept)
    refused = run(teacher, sources, tmp_path / "de", "src_lang=en", "tgt_lang=de")
    assert refused.returncode == 2 and "the corpus suffixes en -> de are not its codes" in refused.stderr

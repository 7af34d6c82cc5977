"""seq2seq-distill: its corpus is, line for line, what seq2seq-translate writes for the same teacher and
search, with the teacher's score of each translation beside it; an ensemble teacher is the Translator's
ensemble; a run killed with SIGKILL in the middle of a chunk resumes to the bytes (and the filter's
counts) of an uninterrupted run, never taking the part of a chunk on disk for a chunk; another teacher or
search is refused by name; the filter drops exactly the pairs the scores say, without translating again.

The command runs in this process on the config Hydra composes, as in test_backtranslate.py (whose
chunk machinery it shares), and so does seq2seq-translate, the reference; only the run killed by
SIGKILL is a subprocess.
"""

from __future__ import annotations

import json
import logging
import math
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from commands import ENV, error_line
from in_process import run_command, translate_lines
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.cli.distill import distill, read_filter
from seq2seq.corpus_translation.distillation import LAYOUT
from seq2seq.corpus_translation.output_dir import OutputDir
from seq2seq.corpus_translation.score_filter import SCORE_SUFFIX, ScoreFilter, dropped_pairs
from seq2seq.errors import UserError

LINES = [*sentences(5, seed=11), "", *sentences(6, seed=12)]  # 12 lines, one blank
GIVEN = [line for line in LINES if line]
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12"]  # random models rarely stop by themselves
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # the Translator's side of SHORT
LANGUAGES = {"data": {"src_lang": "en", "tgt_lang": "es"}}

# Kills the run (SIGKILL, as `kill -9`) in the middle of chunk 1, chunk 0 done: "search" as chunk 1's
# translation starts (no file of it written), "<file>" half-way through writing that file of chunk 1 (its
# earlier files renamed into place, this one only a half-written temporary, no done marker).
KILL_MID_CHUNK = """
import contextlib, os, runpy, signal, sys
from seq2seq.corpus_translation import output_dir as translated_corpus_dir
from seq2seq.inference.translator import Translator
where = sys.argv.pop(1)
def die():
    os.kill(os.getpid(), signal.SIGKILL)
translate, calls = Translator.translate, []  # a chunk's one call: corpus translation's only path
def translate_then_die(self, *args, **kwargs):
    calls.append(1)
    if where == "search" and len(calls) == 2:
        die()
    return translate(self, *args, **kwargs)
Translator.translate = translate_then_die
class HalfThenDie:
    def __init__(self, stream):
        self.stream = stream
    def write(self, data):
        self.stream.write(data[: len(data) // 2])
        self.stream.flush()
        os.fsync(self.stream.fileno())
        die()
output = translated_corpus_dir.atomic_output
@contextlib.contextmanager
def dying_output(path, *args, **kwargs):
    with output(path, *args, **kwargs) as stream:
        yield HalfThenDie(stream) if path.name == where else stream
translated_corpus_dir.atomic_output = dying_output
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
    return run_command(distill, "distill", *settings(teacher, source, out, *overrides))


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
@pytest.mark.parametrize(
    ("where", "in_place"),
    [
        ("search", []),
        ("000001.es", ["000001.en"]),
        ("000001.json", ["000001.en", "000001.es", "000001.scores"]),
    ],
)
def test_a_run_killed_in_the_middle_of_a_chunk_resumes_to_the_uninterrupted_corpus_and_filter(
    teachers, sources, tmp_path, where, in_place
):
    """Chunk 1 is cut off as its search starts, half-way through its translations' file (its sources'
    file already in place), or half-way through its done marker (all its files in place): in each case
    it must be translated again, not taken as done, and the corpus, dropped.tsv and the filter's counts
    must be those of a run never interrupted."""
    rule = "filter.drop_fraction=0.29"  # floor(0.29 * pairs): a few pairs dropped
    assert run(teachers[0], sources, tmp_path / "whole", rule).returncode == 0
    killed = subprocess.run(
        [sys.executable, "-c", KILL_MID_CHUNK, where, *settings(teachers[0], sources, tmp_path / "d", rule)],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    chunks = tmp_path / "d" / "chunks"
    assert sorted(p.name for p in chunks.glob("*.json")) == ["000000.json"]
    left = sorted(p.name for p in chunks.iterdir() if p.name.startswith(("000001", ".000001")))
    assert [name for name in left if not name.startswith(".")] == in_place
    assert [name.split(".")[1:3] for name in left if name.startswith(".")] == (
        [] if where == "search" else [where.split(".")]
    )  # the file being written: a half-written temporary
    out = OutputDir(tmp_path / "d", "en", "es", SCORE_SUFFIX, layout=LAYOUT)
    assert list(out.done_chunks()) == [0]  # the part of chunk 1 on disk is not taken for a chunk
    resumed = run(teachers[0], sources, tmp_path / "d", rule)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (report(tmp_path / "d")["chunks"], report(tmp_path / "d")["chunks_resumed"]) == (3, 1)
    assert corpus(tmp_path / "d") == corpus(tmp_path / "whole")
    assert (tmp_path / "d" / "dropped.tsv").read_bytes() == (tmp_path / "whole" / "dropped.tsv").read_bytes()
    done = report(tmp_path / "d")
    assert done["filter"] == report(tmp_path / "whole")["filter"]
    assert done["filter"]["dropped"] == math.floor(Fraction("0.29") * done["pairs"]) > 0
    assert not [p for p in chunks.iterdir() if p.name.startswith(".")]  # the dead run's temporary is gone


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
    ("fraction", "pairs", "count"),
    [("0.29", 100, 29), ("0.1", 30, 3), ("0.7", 10, 7), ("0.57", 100, 57), ("0.58", 50, 29),
     ("0.7", 90, 63), ("0.35", 180, 63), ("0.82", 150, 123), ("0.29", 200, 58), ("0.05", 7, 0),
     ("0.5", 1, 0), ("0.99", 100, 99), ("0.333", 1000, 333)],
)  # fmt: skip
def test_drop_fraction_drops_floor_of_the_written_fraction_times_the_pairs(fraction, pairs, count):
    """The count is floor(F * n) on F as the user writes it, the exact rational product; binary floats
    give 0.29 * 100 = 28.999999999999996 (28 pairs). Read through the filter's own setting parser."""
    assert math.floor(Fraction(fraction) * pairs) == count  # the exact reference agrees with the table
    rule = read_filter({"drop_fraction": float(fraction)})
    scores = np.linspace(-5.0, -0.1, pairs)[::-1].copy()  # distinct scores, the lowest last
    dropped = np.flatnonzero(dropped_pairs(scores, rule)).tolist()
    assert dropped == list(range(pairs - count, pairs))  # exactly the `count` lowest
    assert read_filter({"drop_fraction": fraction}).drop_fraction == rule.drop_fraction  # "0.29" as text too


def test_drop_fraction_matches_the_exact_count_for_every_hundredth_and_size():
    for hundredths in range(1, 100):
        rule = ScoreFilter(drop_fraction=hundredths / 100)
        for pairs in (1, 7, 30, 50, 90, 100, 150, 180, 300, 1000):
            expected = math.floor(Fraction(hundredths, 100) * pairs)
            assert int(dropped_pairs(np.zeros(pairs), rule).sum()) == expected, (hundredths, pairs)


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
    translator = Translator.from_checkpoint(teacher, options=OPTIONS)
    expected = [t.text for t in translator.translate(GIVEN, src_lang="en", tgt_lang="fr")]
    kept = dict(zip(lines_of(tmp_path / "out" / "distill.en"), lines_of(tmp_path / "out" / "distill.fr")))
    assert kept and all(kept[source] == target for source, target in zip(GIVEN, expected) if source in kept)
    refused = run(teacher, sources, tmp_path / "de", "src_lang=en", "tgt_lang=de")
    assert refused.returncode == 2 and "the corpus suffixes en -> de are not its codes" in refused.stderr

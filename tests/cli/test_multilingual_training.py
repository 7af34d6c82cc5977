"""A multilingual run through seq2seq-train and seq2seq-translate: one model trained on en->es and es->en,
then translating in each direction by tgt_lang."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu
import torch
from commands import ENV, KILL_AFTER_SAVE, error_line, run_module, train_tiny, translate
from toy_corpus import tiny_train_overrides

from seq2seq.decode.options import SearchOptions
from seq2seq.inference.translator import Translator
from seq2seq.precision import resolve_precision


def both_directions(corpus: Path) -> tuple[str, ...]:
    """Overrides that train the toy corpus in both directions, validating es->en."""
    backwards = f"{{src: {corpus / 'train.es'}, tgt: {corpus / 'train.en'}, src_lang: es, tgt_lang: en}}"
    return (
        "+data.train.src_lang=en", "+data.train.tgt_lang=es", f"data.extra_train=[{backwards}]",
        f"data.dev.src={corpus / 'dev.es'}", f"data.dev.tgt={corpus / 'dev.en'}",
        "+data.dev.src_lang=es", "+data.dev.tgt_lang=en",
    )  # fmt: skip


def both_dev_overrides(corpus: Path, run_dir: Path) -> list[str]:
    """A tiny run's overrides (tiny_train_overrides) training both directions and validating both: data.dev
    replaced by a list of two dev sets (on the command line a mapping is replaced by deleting it first)."""
    forwards = f"{{src: {corpus / 'dev.en'}, tgt: {corpus / 'dev.es'}, src_lang: en, tgt_lang: es}}"
    backwards = f"{{src: {corpus / 'dev.es'}, tgt: {corpus / 'dev.en'}, src_lang: es, tgt_lang: en}}"
    tests = [f"{{src: {corpus / f'test.{a}'}, tgt: {corpus / f'test.{b}'}, src_lang: {a}, tgt_lang: {b}}}"
             for a, b in (("en", "es"), ("es", "en"))]  # fmt: skip
    training = [o for o in both_directions(corpus) if not o.startswith(("data.dev", "+data.dev"))]
    return [*tiny_train_overrides(corpus, run_dir, *training, BOTH), "~data.dev", f"+data.dev=[{forwards}, {backwards}]",
            "~data.test", f"+data.test=[{', '.join(tests)}]"]  # fmt: skip


@pytest.mark.slow
def test_one_model_translates_both_ways_by_tgt_lang(corpus: Path, tmp_path: Path) -> None:
    run_dir = train_tiny(corpus, tmp_path / "run", *both_directions(corpus), "data.tokenizer.vocab_size=70")
    translator = Translator.from_checkpoint(run_dir / "last.pt")
    codes = translator.src_tokenizer.languages
    assert sorted(codes) == ["en", "es"]
    lines = ["the man sees the dog", "el perro ve al hombre"]
    for src_lang, tgt_lang in (("en", "es"), ("es", "en")):
        result, output = translate(run_dir, tmp_path, lines, None, f"src_lang={src_lang}", f"tgt_lang={tgt_lang}")
        assert result.returncode == 0, result.stderr[-2000:]
        expected = [t.text for t in translator.translate(lines, src_lang=src_lang, tgt_lang=tgt_lang)]
        assert output.read_text().splitlines() == expected and not any("__" in line for line in expected)
    result, _ = translate(run_dir, tmp_path, lines, None)
    assert "none was chosen; pass src_lang= one of en, es" in error_line(result)
    mixed = ["en\tes\tthe man sees the dog", "es\ten\tel perro ve al hombre", "", "es\tes\tel perro ve al hombre"]
    result, output = translate(run_dir, tmp_path, mixed, None, "language_columns=[src_lang,tgt_lang]")
    assert result.returncode == 0, result.stderr[-2000:]
    expected = [translator.translate([line.split("\t")[2]], src_lang=line[:2], tgt_lang=line[3:5])[0].text if line else ""
                for line in mixed]  # fmt: skip
    assert output.read_text().splitlines() == expected


@pytest.mark.slow
def test_a_multilingual_run_without_dev_languages_is_refused_before_anything_is_built(
    corpus: Path, tmp_path: Path
) -> None:
    overrides = [o for o in both_directions(corpus) if not o.startswith("+data.dev")]
    result = run_module("seq2seq.cli.train", *tiny_train_overrides(corpus, tmp_path / "run", *overrides),
                        cwd=tmp_path)  # fmt: skip
    assert "give data.dev its src_lang and tgt_lang too" in error_line(result)
    assert not (tmp_path / "run" / "last.pt").exists()


BOTH = "data.tokenizer.vocab_size=70"
REPOSITORY = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def straight_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 updates on en->es and es->en, validated in both directions at 2 and 4, never interrupted."""
    run_dir = tmp_path_factory.mktemp("both") / "run"
    result = run_module("seq2seq.cli.train", *both_dev_overrides(corpus, run_dir), cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.mark.slow
def test_a_killed_multilingual_run_resumes_bitwise(straight_run: Path, corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    overrides = both_dev_overrides(corpus, run_dir)
    command = [sys.executable, "-c", KILL_AFTER_SAVE, "2", "seq2seq.cli.train", *overrides]
    killed = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    resumed = run_module("seq2seq.cli.train", *overrides, cwd=tmp_path)
    assert resumed.returncode == 0 and "at update 2" in resumed.stdout + resumed.stderr, resumed.stderr[-3000:]
    ours, theirs = (torch.load(d / "last.pt", weights_only=True) for d in (run_dir, straight_run))
    assert ours["step"] == theirs["step"] == 4
    assert all(torch.equal(ours["model"][key], theirs["model"][key]) for key in theirs["model"])
    histories = [json.loads((d / "summary.json").read_text())["history"] for d in (run_dir, straight_run)]
    timeless = [[{k: v for k, v in r.items() if k not in ("minutes", "seconds")} for r in h] for h in histories]
    assert timeless[0] == timeless[1]


@pytest.mark.slow
def test_dev_scores_per_direction_equal_translating_each_with_the_saved_model(straight_run: Path, corpus: Path) -> None:
    """Each dev direction's BLEU/chrF is what translating its dev set with the saved model scores; the
    run's bleu/chrf (its objective) are their means, and summary.json and the sweep report list each."""
    precision = resolve_precision("auto", torch.device("cpu"))  # the precision the run validated in
    translator = Translator.from_checkpoint(straight_run / "last.pt", options=SearchOptions(), precision=precision)
    summary = json.loads((straight_run / "summary.json").read_text())
    last = summary["history"][-1]
    for src_lang, tgt_lang in (("en", "es"), ("es", "en")):
        sources = (corpus / f"dev.{src_lang}").read_text(encoding="utf-8").splitlines()
        references = (corpus / f"dev.{tgt_lang}").read_text(encoding="utf-8").splitlines()
        hypotheses = [t.text for t in translator.translate(sources, src_lang=src_lang, tgt_lang=tgt_lang)]
        name = f"{src_lang}-{tgt_lang}"
        assert last[f"bleu_{name}"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score, abs=1e-6)
        assert last[f"chrf_{name}"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references]).score, abs=1e-6)
    assert last["bleu"] == pytest.approx((last["bleu_en-es"] + last["bleu_es-en"]) / 2)
    assert last["chrf"] == pytest.approx((last["chrf_en-es"] + last["chrf_es-en"]) / 2)
    directions = summary["dev_directions"]
    objective = (summary["final"] or {}).get("bleu") or summary["best_dev_bleu"]
    assert sorted(directions) == ["en-es", "es-en"]
    assert objective == pytest.approx((directions["en-es"]["bleu"] + directions["es-en"]["bleu"]) / 2)
    result = subprocess.run([sys.executable, "scripts/sweep_report.py", str(straight_run.parent)], cwd=REPOSITORY,
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    with (straight_run.parent / "report.csv").open(newline="") as handle:
        (cells,) = list(csv.DictReader(handle))
    assert cells["dev BLEU en-es"] == f"{directions['en-es']['bleu']:.2f}"
    assert cells["dev BLEU es-en"] == f"{directions['es-en']['bleu']:.2f}"


@pytest.mark.slow
def test_test_scoring_per_direction_translates_each_with_its_languages(straight_run: Path, corpus: Path) -> None:
    """scripts/score_directions.py: each test direction translated with its src_lang/tgt_lang (what the
    Translator gives) and scored by sacreBLEU, the mean of the directions beside them."""
    result = subprocess.run([sys.executable, "scripts/score_directions.py", str(straight_run)], cwd=REPOSITORY,
                            capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    report = json.loads((straight_run / "test_directions.json").read_text())
    translator = Translator.from_checkpoint(Path(report["checkpoint"]))
    for src_lang, tgt_lang in (("en", "es"), ("es", "en")):
        name = f"{src_lang}-{tgt_lang}"
        sources = (corpus / f"test.{src_lang}").read_text(encoding="utf-8").splitlines()
        references = (corpus / f"test.{tgt_lang}").read_text(encoding="utf-8").splitlines()
        written = (straight_run / f"test.{name}" / "hypotheses.txt").read_text(encoding="utf-8").splitlines()
        assert written == [t.text for t in translator.translate(sources, src_lang=src_lang, tgt_lang=tgt_lang)]
        scores = report["directions"][name]["metrics"]
        assert scores["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(written, [references]).score)
        assert scores["chrf"]["score"] == pytest.approx(sacrebleu.corpus_chrf(written, [references]).score)
        assert f"test {name}" in result.stdout
    means = [report["directions"][n]["metrics"]["bleu"]["score"] for n in ("en-es", "es-en")]
    assert report["mean"]["bleu"] == pytest.approx(sum(means) / 2) and "test mean of directions" in result.stdout


@pytest.mark.slow
def test_test_scoring_of_a_run_without_test_files_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "scripts/score_directions.py", str(tmp_path)], cwd=REPOSITORY,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "pass a run directory that seq2seq-train wrote" in result.stderr and "Traceback" not in result.stderr

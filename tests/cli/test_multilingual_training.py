"""A multilingual run through seq2seq-train and seq2seq-translate: one model trained on en->es and es->en,
then translating in each direction by tgt_lang."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def straight_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 updates on en->es and es->en, validated (es->en) at 2 and 4, never interrupted."""
    return train_tiny(corpus, tmp_path_factory.mktemp("both") / "run", *both_directions(corpus), BOTH)


@pytest.mark.slow
def test_a_killed_multilingual_run_resumes_bitwise(straight_run: Path, corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    overrides = tiny_train_overrides(corpus, run_dir, *both_directions(corpus), BOTH)
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
def test_dev_scores_equal_translating_the_dev_direction_with_the_saved_model(straight_run: Path, corpus: Path) -> None:
    sources = (corpus / "dev.es").read_text(encoding="utf-8").splitlines()
    references = (corpus / "dev.en").read_text(encoding="utf-8").splitlines()
    precision = resolve_precision("auto", torch.device("cpu"))  # the precision the run validated in
    translator = Translator.from_checkpoint(straight_run / "last.pt", options=SearchOptions(), precision=precision)
    hypotheses = [t.text for t in translator.translate(sources, src_lang="es", tgt_lang="en")]
    history = json.loads((straight_run / "summary.json").read_text())["history"]
    assert history[-1]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score, abs=1e-6)

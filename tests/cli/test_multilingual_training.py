"""A multilingual run through seq2seq-train and seq2seq-translate: one model trained on en->es and es->en,
then translating in each direction by tgt_lang."""

from __future__ import annotations

from pathlib import Path

import pytest
from commands import error_line, run_module, train_tiny, translate
from toy_corpus import tiny_train_overrides

from seq2seq.inference.translator import Translator


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

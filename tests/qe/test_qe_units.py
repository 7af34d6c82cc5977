"""QE's small parts on fixed inputs: labels against sacrebleu, correlations against scipy, the QE corpus
format and its errors, and fitting a pair into the model's positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import scipy.stats
from sacrebleu.metrics import CHRF, TER

from seq2seq.errors import UserError
from seq2seq.qe.corpus import read_qe_corpus, write_qe_corpus
from seq2seq.qe.correlation import pearson, ranks, spearman
from seq2seq.qe.generate import Pass, pass_record, run_pass
from seq2seq.data.qe_pairs import fit_pair
from seq2seq.qe.labels import sentence_labels

HYPS = ["el perro ve al gato", "la casa", "", "un hombre ama el pan"]
REFS = ["el perro ve el gato", "el agua", "la luz", "un hombre ama el pan"]


def test_chrf_labels_are_sacrebleus_sentence_chrf_over_100() -> None:
    expected = [CHRF().sentence_score(h, [r]).score / 100 for h, r in zip(HYPS, REFS)]
    assert sentence_labels(HYPS, REFS) == expected
    assert sentence_labels(HYPS, REFS)[3] == 1.0


def test_ter_labels_are_one_minus_capped_ter() -> None:
    expected = [1 - min(TER().sentence_score(h, [r]).score / 100, 1) for h, r in zip(HYPS, REFS)]
    assert sentence_labels(HYPS, REFS, metric="ter") == expected


def test_label_errors() -> None:
    with pytest.raises(UserError, match="metric='bleu' is not supported"):
        sentence_labels(HYPS, REFS, metric="bleu")
    with pytest.raises(UserError, match="4 translations but 3 references"):
        sentence_labels(HYPS, REFS[:3])


def test_correlations_equal_scipys() -> None:
    x = [0.1, 0.4, 0.4, 0.9, 0.2, 0.7, 0.7, 0.7]
    y = [0.3, 0.2, 0.5, 0.8, 0.1, 0.9, 0.6, 0.6]
    assert pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
    assert ranks(x).tolist() == scipy.stats.rankdata(x).tolist()
    assert pearson([1.0, 1.0, 1.0], [0.1, 0.2, 0.3]) == 0.0  # constant: no relation measurable


def test_qe_corpus_round_trip_skips_empty_sides(tmp_path: Path) -> None:
    path = tmp_path / "qe.tsv"
    rows = [("the dog", "el perro", 0.5), ("a\ttab", "un", 1.0), ("", "vacío", 0.2), ("luz", " ", 0.0)]
    assert write_qe_corpus(path, rows) == 4
    corpus = read_qe_corpus(path)
    assert corpus.sources == ["the dog", "a tab"]
    assert corpus.translations == ["el perro", "un"]
    assert corpus.labels == [0.5, 1.0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"one\ttwo\n", "line 1 has 2 tab-separated fields, not 3"),
        (b"a\tb\t0.5\nc\td\t1.5\n", "line 2: label '1.5' is not a number from 0 to 1"),
        (b"a\tb\tnan\n", "line 1: label 'nan' is not a number from 0 to 1"),
        (b"a\tb\t0.5\n\xff\tc\t0.1\n", "line 2 is not valid UTF-8"),
        (b"\tb\t0.5\n", "holds no example with a source and a translation"),
    ],
)
def test_a_bad_qe_corpus_is_a_one_line_error_naming_the_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.tsv"
    path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        read_qe_corpus(path)


def test_fit_pair_shortens_the_longer_side_and_keeps_both_eos() -> None:
    source, translation = list(range(10, 20)) + [3], [30, 31, 3]
    short_source, short_translation = fit_pair(source, translation, 8)
    assert short_source == [10, 11, 12, 13, 3] and short_translation == [30, 31, 3]
    assert fit_pair([10, 3], [30, 3], 8) == ([10, 3], [30, 3])


def test_a_pass_made_at_another_precision_is_translated_again(tmp_path: Path) -> None:
    """Item: the pass record left out the precision, so a rerun with precision=bf16 reused the fp32
    translations (and their labels) as if they were its own."""
    checkpoint, source = tmp_path / "model.pt", tmp_path / "train.en"
    checkpoint.write_bytes(b"weights")
    source.write_text("the dog\n", encoding="utf-8")
    one, calls = Pass("train", 0, checkpoint, "greedy"), []

    def translate(_: Pass, sources: list[str]) -> list[str]:
        calls.append(len(sources))
        return [f"translation {len(calls)}"]

    fp32, bf16 = (pass_record(one, source, limit=None, seed=1, precision=p) for p in ("fp32", "bf16"))
    assert run_pass(one, ["the dog"], fp32, tmp_path / "passes", translate) == ["translation 1"]
    assert run_pass(one, ["the dog"], fp32, tmp_path / "passes", translate) == ["translation 1"]  # reused
    assert run_pass(one, ["the dog"], bf16, tmp_path / "passes", translate) == ["translation 2"]
    assert json.loads((tmp_path / "passes" / "train.0.json").read_text())["precision"] == "bf16"

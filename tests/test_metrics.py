"""score_corpus equals sacreBLEU called directly; bad inputs are one-line UserErrors."""

from __future__ import annotations

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from seq2seq.errors import UserError
from seq2seq.inference.text_input import read_text_lines as read_lines
from seq2seq.metrics import format_scores, score_corpus

HYPS = ["The cat sat on the mat.", "A quick brown fox jumps.", "Hello , world !"]
REFS = [
    ["The cat is on the mat.", "The quick brown fox jumps over.", "Hello, world!"],
    ["A cat sat on the mat.", "A fast brown fox jumped.", "hello world"],
]


def test_scores_equal_sacrebleu_with_two_reference_sets():
    results = score_corpus(HYPS, REFS, metrics=("bleu", "chrf", "chrf++", "ter"))
    assert list(results) == ["bleu", "chrf", "chrf++", "ter"]
    assert results["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, REFS).score)
    assert results["chrf"]["score"] == pytest.approx(sacrebleu.corpus_chrf(HYPS, REFS).score)
    assert results["chrf++"]["score"] == pytest.approx(CHRF(word_order=2).corpus_score(HYPS, REFS).score)
    assert results["ter"]["score"] == pytest.approx(sacrebleu.corpus_ter(HYPS, REFS).score)
    bleu = BLEU()
    bleu.corpus_score(HYPS, REFS)
    assert results["bleu"]["signature"] == str(bleu.get_signature())
    assert results["ter"]["signature"].startswith("nrefs:2|")
    assert "BLEU = " in format_scores(results) and "signature: nrefs:2" in format_scores(results)


def test_tokenizer_and_case_options_reach_sacrebleu():
    results = score_corpus(HYPS, REFS[:1], metrics=("bleu",), tokenize="intl", lowercase=True)
    expected = BLEU(tokenize="intl", lowercase=True)
    assert results["bleu"]["score"] == pytest.approx(expected.corpus_score(HYPS, REFS[:1]).score)
    assert "tok:intl" in results["bleu"]["signature"] and "case:lc" in results["bleu"]["signature"]
    assert score_corpus(HYPS, REFS[:1], metrics=("ter",))["ter"]["score"] == pytest.approx(
        TER().corpus_score(HYPS, REFS[:1]).score
    )


def test_mismatched_line_counts_name_both_counts_and_files():
    with pytest.raises(UserError, match=r"hyp\.txt has 3 lines but ref2\.txt has 2") as error:
        score_corpus(
            HYPS, [REFS[0], REFS[1][:2]], hypothesis_name="hyp.txt", reference_names=["r1", "ref2.txt"]
        )
    assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="has 3 lines but reference set 1 has 1"):
        score_corpus(HYPS, [REFS[0][:1]])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metrics": ("bleu", "meteor")}, "unknown metric 'meteor'"),
        ({"tokenize": "nope"}, "not a sacreBLEU tokenizer"),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(UserError, match=message):
        score_corpus(HYPS, REFS, **kwargs)


def test_empty_inputs():
    with pytest.raises(UserError, match="nothing to score"):
        score_corpus([], [[]])
    with pytest.raises(UserError, match="no references"):
        score_corpus(HYPS, [])


def test_read_lines(tmp_path):
    path = tmp_path / "text.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\n\nfour")
    assert read_lines(path) == ["one", "two", "", "four"]
    path.write_bytes(b"a\nb\n")
    assert read_lines(path) == ["a", "b"]
    path.write_bytes(b"ok\nstill ok\nbad \xff here\n")
    with pytest.raises(UserError, match=r"text\.txt line 3 is not valid UTF-8 \(byte 0xff at column 5\)"):
        read_lines(path)
    with pytest.raises(UserError, match="does not exist"):
        read_lines(tmp_path / "missing.txt")
    with pytest.raises(UserError, match="is a directory"):
        read_lines(tmp_path)

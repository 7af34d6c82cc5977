"""The server's one vocabulary: a request's texts are "texts" ("text", the old name, still works for one
release and logs one warning naming the new one; both at once is a 422); with nbest > 1 each text's
answer is the one n-best shape, a list of records best first with their "score" (the deprecated "scores"
is still sent); the per-text count of phrases asked for is "constraints_total" (its old name
"constraints" is still sent)."""

from __future__ import annotations

import json
import logging

import pytest

from seq2seq.decode.options import DEFAULT_OPTIONS
from seq2seq.inference.confidence import Translation
from seq2seq.serve.app import _translations
from seq2seq.serve.requests import HTTPError, Limits, parse_request

OLD = 'the request field "text" is deprecated and will stop working in the next release; use "texts"'


def parse(**payload: object):
    return parse_request(json.dumps(payload).encode(), Limits(), DEFAULT_OPTIONS)


def test_texts_is_the_field(caplog):
    with caplog.at_level(logging.WARNING):
        assert parse(texts=["a", "b"]).texts == ["a", "b"] and parse(texts="a").texts == ["a"]
    assert not caplog.records


def test_text_still_works_and_logs_once(caplog):
    with caplog.at_level(logging.WARNING):
        assert parse(text=["a", "b"]).texts == ["a", "b"]
    assert [record.getMessage() for record in caplog.records] == [OLD]


def test_text_and_texts_together_is_a_422():
    with pytest.raises(HTTPError, match='give "texts" only') as refused:
        parse(text="a", texts="b")
    assert refused.value.status == 422


def test_nbest_answers_are_lists_of_records():
    ranked = [[Translation("a", -1.0), Translation("b", -2.123456)], [Translation("", 0.0)]]
    answer = _translations(ranked, nbest=2, confidence=False)
    assert answer["translations"] == [
        [{"text": "a", "score": -1.0, "translation": "a"}, {"text": "b", "score": -2.1235, "translation": "b"}],
        [{"text": "", "score": 0.0, "translation": ""}],  # "translation": the old name of "text", one release
    ]
    assert answer["scores"] == [[-1.0, -2.1235], [0.0]]  # deprecated, kept for one release
    assert _translations(ranked, nbest=1, confidence=False) == {"translations": ["a", ""]}


def test_constraints_total_is_the_count_of_phrases_asked_for():
    best = Translation("a", -1.0, constraints_met=1, constraints_total=2, engine="torch")
    answer = _translations([[best], [Translation("", 0.0)]], nbest=1, confidence=True)
    assert answer["constraints_total"] == [2, None] and answer["constraints_met"] == [1, None]
    assert answer["constraints"] == answer["constraints_total"]  # the old name, for one release
    assert (
        answer["translations"][0]["constraints_total"] == 2 and "constraints" not in answer["translations"][0]
    )

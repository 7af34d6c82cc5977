"""seq2seq-serve's "confidence" field: with true, each translation is an object with the Translator's own
confidence values (translate(..., confidence=True)); a value other than true or false is a 422;
requests with and without it share a batch and each gets exactly the answer it would get alone. The app
runs in this process under FastAPI's TestClient, as seq2seq-serve builds it; the batching is also
driven directly, so that the requests surely meet in one search."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tiny_models import sentences

from seq2seq import Translator
from seq2seq.inference.confidence import nbest_json
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # beam 5, with a constant output limit
TEXTS = [*sentences(4, seed=6), ""]


@pytest.fixture(scope="module")
def translator(checkpoint: Path) -> Translator:
    return Translator.from_checkpoint(checkpoint, options=OPTIONS)


@pytest.fixture(scope="module")
def client(checkpoint: Path) -> Iterator[TestClient]:
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as test_client:
        yield test_client


def test_each_translation_carries_its_confidence(client, translator):
    answer = client.post("/translate", json={"texts": TEXTS, "confidence": True})
    assert answer.status_code == 200, answer.text
    expected = translator.translate(TEXTS, confidence=True)
    translations = answer.json()["translations"]
    assert translations == [t.to_json() for t in expected]
    assert list(translations[0]) == ["text", "confidence", "mean_log_prob", "tokens", "token_probs", "translation"]
    assert translations[0]["tokens"][-1] == "</s>" and 0 < translations[0]["confidence"] <= 1
    assert translations[-1] == {"text": "", "confidence": None, "mean_log_prob": None, "tokens": [],
                                "token_probs": [], "translation": ""}  # fmt: skip
    plain = client.post("/translate", json={"texts": TEXTS, "confidence": False}).json()
    assert plain["translations"] == [t.text for t in expected]  # false: the plain strings, as before
    assert client.post("/translate", json={"texts": TEXTS}).json()["translations"] == plain["translations"]


def test_nbest_with_confidence(client, translator):
    answer = client.post(
        "/translate", json={"texts": TEXTS[:2], "nbest": 3, "beam_size": 4, "confidence": True}
    )
    assert answer.status_code == 200, answer.text
    expected = translator.translate(TEXTS[:2], nbest=3, beam_size=4, confidence=True)
    assert answer.json()["translations"] == [nbest_json(best.nbest, confidence=True) for best in expected]
    assert answer.json()["scores"] == [
        [round(t.score, 4) for t in best.nbest] for best in expected
    ]  # deprecated


@pytest.mark.parametrize("value", ["yes", 1, None, [True]])
def test_a_confidence_that_is_not_a_boolean_is_a_422(client, value):
    answer = client.post("/translate", json={"texts": "god", "confidence": value})
    assert answer.status_code == 422
    assert answer.json() == {"error": f'"confidence" must be true or false, got {json.dumps(value)}'}


def together(checkpoint: Path, requests: list[tuple[list[str], bool]]) -> tuple[list, int, int]:
    """The answers of `requests` (texts, confidence) sent at once to one batcher, and its (batches,
    largest batch in requests)."""
    batcher = BatchingTranslator(
        lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS),
        batch_wait_ms=300,
        max_batch_wait_ms=3000,
    )

    async def send() -> list:
        encode = batcher.translator.encode
        work = [batcher.translate(encode(texts, confidence=asked)) for texts, asked in requests]
        return await asyncio.gather(*work)

    try:
        answers = asyncio.run(send())
    finally:
        batcher.close()
    return answers, batcher.stats.batches, batcher.stats.largest_batch_requests


def test_requests_with_and_without_confidence_share_a_batch_and_keep_their_answers(checkpoint, translator):
    texts = [[TEXTS[0], TEXTS[1]], [TEXTS[2]], [TEXTS[3], TEXTS[4]], [TEXTS[1]]]
    asked = [True, False, True, False]
    mixed, batches, largest = together(checkpoint, list(zip(texts, asked)))
    assert (batches, largest) == (1, len(texts))  # one search for all four
    plain, batches, _ = together(checkpoint, [(request, False) for request in texts])
    assert batches == 1
    for request, wanted, answer, alone in zip(texts, asked, mixed, plain):
        if not wanted:
            assert answer == alone  # exactly what it gets when no request asks for confidence
            continue
        assert [[(t.text, t.score) for t in ranked] for ranked in answer] == [
            [(t.text, t.score) for t in ranked] for ranked in alone
        ]
        expected = translator.translate(request, confidence=True)
        for (found,), own in zip(answer, expected):
            assert found.text == own.text and found.tokens == own.tokens
            assert found.token_probs == pytest.approx(own.token_probs, rel=1e-4, abs=1e-6)

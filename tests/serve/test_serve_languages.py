"""seq2seq-serve's "tgt_lang" and "src_lang" request fields on a multilingual model: each request is
translated into (and from) its own languages, as the Translator translates it; requests for different
languages that arrive together share one batch and get what each alone gets; an unknown code, a code
for a model without codes and a missing language are 422s naming the fix. The app runs in this process
under FastAPI's TestClient."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from multilingual_model import OPTIONS, module_fixtures, multilingual_checkpoint

from seq2seq import Translator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

TEXTS = ["in the beginning god created heaven", "the night was good", "water and land"]


checkpoint, translator = module_fixtures()  # imported with source "en" and target "es"


def serve(path: Path, **batching: float) -> TestClient:
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(path, options=OPTIONS), **batching)
    return TestClient(
        create_app(batcher, name=path.name, limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    )


@pytest.fixture(scope="module")
def client(checkpoint: Path) -> Iterator[TestClient]:
    """A batch stays open 300 ms after each request (2 s at most): requests sent together share it."""
    with serve(checkpoint, batch_wait_ms=300, max_batch_wait_ms=2000) as test_client:
        yield test_client


def post_together(client: TestClient, bodies: list[dict]) -> list:
    """Every body posted at the same moment from its own thread (so they meet in one batch)."""
    barrier = threading.Barrier(len(bodies))

    def post(body: dict):
        barrier.wait()
        return client.post("/translate", json=body)

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(post, bodies))


def test_each_request_gets_its_languages(client, translator):
    default = client.post("/translate", json={"texts": TEXTS})
    french = client.post("/translate", json={"texts": TEXTS, "tgt_lang": "fr", "confidence": True})
    from_french = client.post("/translate", json={"texts": TEXTS, "src_lang": "fr", "tgt_lang": "es"})
    assert default.status_code == french.status_code == from_french.status_code == 200, french.text
    assert default.json()["translations"] == [t.text for t in translator.translate(TEXTS)]
    expected = translator.translate(TEXTS, tgt_lang="fr", confidence=True)
    assert french.json()["translations"] == [t.to_json() for t in expected]
    assert all("__fr__" not in record["tokens"] for record in french.json()["translations"])
    assert from_french.json()["translations"] == [t.text for t in translator.translate(TEXTS, src_lang="fr")]
    assert french.json()["translations"] != default.json()["translations"]


def test_languages_that_arrive_together_share_a_batch_and_answer_as_alone(client, translator):
    bodies = [
        {"texts": TEXTS[:2], "tgt_lang": "fr"},
        {"texts": TEXTS[1:], "tgt_lang": "en", "nbest": 2},
        {"texts": TEXTS[2:]},
        {"texts": TEXTS[:1], "src_lang": "es", "tgt_lang": "fr"},
    ]
    before = client.get("/stats").json()
    responses = post_together(client, bodies)
    assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
    stats = client.get("/stats").json()
    assert stats["batches"] - before["batches"] < 4 and stats["largest_batch_requests"] > 1
    for body, response in zip(bodies, responses):
        alone = client.post("/translate", json=body).json()["translations"]  # a batch of its own
        assert response.json()["translations"] == alone
    first, second = (r.json()["translations"] for r in responses[:2])
    assert first == [t.text for t in translator.translate(TEXTS[:2], tgt_lang="fr")]
    nbest = translator.translate(TEXTS[1:], tgt_lang="en", nbest=2)
    assert [[record["text"] for record in ranked] for ranked in second] == [
        [t.text for t in best.nbest] for best in nbest
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tgt_lang": "de"}, "tgt_lang='de' is not a language of this model; choose one of en, es, fr"),
        ({"src_lang": "xx"}, "src_lang='xx' is not a language of this model; choose one of en, es, fr"),
        ({"tgt_lang": 3}, '"tgt_lang" must be a language code of the model, got 3'),
        ({"tgt_lang": ""}, '"tgt_lang" must be a language code of the model, got ""'),
    ],
)
def test_a_wrong_code_is_a_422_naming_the_codes(client, body, message):
    response = client.post("/translate", json={"texts": TEXTS, **body})
    assert response.status_code == 422 and response.json() == {"error": message}


def test_a_model_that_recorded_no_target_needs_tgt_lang(tmp_path, translator):
    path = multilingual_checkpoint(tmp_path / "model.pt", tgt_lang=None)
    with serve(path) as client:
        missing = client.post("/translate", json={"texts": TEXTS})
        assert missing.status_code == 422
        assert missing.json()["error"] == (
            "this model translates into 3 languages and none was chosen; pass tgt_lang= one of en, es, fr"
        )
        spanish = client.post("/translate", json={"texts": TEXTS, "tgt_lang": "es"})
        assert spanish.status_code == 200
        assert spanish.json()["translations"] == [t.text for t in translator.translate(TEXTS)]


def test_a_model_without_codes_refuses_them(tmp_path):
    from tiny_models import tiny_model_checkpoint

    with serve(tiny_model_checkpoint(tmp_path, step=1)) as client:
        response = client.post("/translate", json={"texts": TEXTS, "tgt_lang": "es"})
        assert response.status_code == 422
        assert response.json() == {
            "error": "tgt_lang='es': this model has no language codes; leave tgt_lang out"
        }
        assert client.post("/translate", json={"texts": TEXTS}).status_code == 200

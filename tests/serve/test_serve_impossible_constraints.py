"""seq2seq-serve refuses a required phrase that holds an avoided one (it could never be written) with a 422
naming the sentence and both phrases, as the Translator and seq2seq-translate do; the app runs in this
process under FastAPI's TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from seq2seq import Translator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}


@pytest.fixture(scope="module")
def client(checkpoint: Path) -> Iterator[TestClient]:
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as test_client:
        yield test_client


def test_a_phrase_holding_an_avoided_one_is_a_422_naming_both(client):
    body = {"text": ["the night was good", "water and land"], "constraints": [[], ["light", "god water"]]}
    answer = client.post("/translate", json={**body, "avoid": ["water"]})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == (
        "the constraints of sentence 1: the phrase 'god water' contains the avoided phrase 'water', so it "
        "can never be written; drop one of the two"
    )
    assert client.post("/translate", json={**body, "avoid": ["earth"]}).status_code == 200

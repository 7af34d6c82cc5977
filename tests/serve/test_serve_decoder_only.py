"""seq2seq-serve with decoder-only checkpoints (causal and prefix LM): every answer equals the Translator's
for the same texts and settings. The app runs in this process under FastAPI's TestClient (as
seq2seq-serve builds it: a BatchingTranslator that loads the checkpoint, create_app over it); one real
server process checks the command itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from serving import Server
from tiny_models import SHARP_DECODER_ONLY_PAIR, sentences, tiny_checkpoints

from seq2seq import Translator
from seq2seq.inference.confidence import nbest_json
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # beam 5, as the Server helper's decode.max_len_* settings
TEXTS = sentences(6, seed=4)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory, languages = tmp_path_factory.mktemp("decoder_only"), {"src_lang": "en", "tgt_lang": "xx"}
    return tiny_checkpoints(directory, SHARP_DECODER_ONLY_PAIR, step=5, config={"data": languages})


@pytest.fixture(params=["causal", "prefix_lm"])
def served(request: pytest.FixtureRequest, checkpoints) -> Iterator[tuple[TestClient, Translator]]:
    """A TestClient of the app over the checkpoint, and a Translator of the same file and settings."""
    checkpoint = checkpoints[request.param]
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name=checkpoint.name, limits=Limits(), metrics=Metrics())
    with TestClient(app) as client:
        yield client, Translator.from_checkpoint(checkpoint, options=OPTIONS)


def test_answers_equal_the_translator(served) -> None:
    client, translator = served
    beam = client.post("/translate", json={"texts": TEXTS})
    assert beam.status_code == 200, beam.text
    assert beam.json()["translations"] == [str(t) for t in translator.translate(TEXTS)]
    greedy = client.post("/translate", json={"texts": TEXTS[0], "beam_size": 1}).json()
    assert greedy["translations"] == [str(t) for t in translator.translate(TEXTS[:1], beam_size=1)]
    nbest = client.post("/translate", json={"texts": TEXTS, "nbest": 3}).json()
    expected = translator.translate(TEXTS, nbest=3)
    assert nbest["translations"] == [nbest_json(best.nbest, confidence=False) for best in expected]
    assert nbest["scores"] == [[round(t.score, 4) for t in best.nbest] for best in expected]  # deprecated
    assert len({tuple(scores) for scores in nbest["scores"]}) == len(TEXTS)  # every text its own answer
    health = client.get("/health").json()
    assert (health["status"], health["engine"], health["step"]) == ("ok", "torch", 5)
    assert (health["src_lang"], health["tgt_lang"]) == ("en", "xx") == (health["source_language"], health["target_language"])


@pytest.mark.slow
def test_the_command_serves_a_decoder_only_checkpoint(checkpoints) -> None:
    server = Server(checkpoints["causal"])
    try:
        answer = httpx.post(f"{server.url}/translate", json={"texts": TEXTS}, timeout=120).json()
    finally:
        assert server.stop() == 0, server.output()[-3000:]
    translator = Translator.from_checkpoint(checkpoints["causal"], options=OPTIONS)
    assert (
        answer["translations"] == [str(t) for t in translator.translate(TEXTS)]
        and answer["model"] == "causal.pt"
    )

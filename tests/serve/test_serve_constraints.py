"""seq2seq-serve's "constraints" and "avoid" fields and its glossary: the answers equal the Translator's,
say how many phrases each translation met and which engine found it; a bad constraint is a 422 naming its
sentence and costs no other request its answer. The app runs in this process under FastAPI's TestClient."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.decode.glossary import Glossary
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}
TEXTS = ["in the beginning god created heaven", "the night was good", ""]
CONSTRAINTS = [["god", "light"], [], []]
GLOSSARY = Glossary([("beginning", "day")])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random model whose favourite output is the word "heaven" (the avoid test needs a whole word)."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=128, seed=3)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "model.pt", model, tokenizer, step=3)


@pytest.fixture(scope="module")
def translator(checkpoint: Path) -> Translator:
    return Translator.from_checkpoint(checkpoint, options=OPTIONS, glossary=GLOSSARY)


@pytest.fixture(scope="module")
def client(checkpoint: Path) -> Iterator[TestClient]:
    batcher = BatchingTranslator(
        lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS, glossary=GLOSSARY)
    )
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as test_client:
        yield test_client


def has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def test_constraints_and_the_glossary_reach_the_translations(client, translator):
    answer = client.post("/translate", json={"text": TEXTS, "constraints": CONSTRAINTS})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["translations"] == translator.translate(TEXTS, constraints=CONSTRAINTS)
    assert has(body["translations"][0], "god") and has(body["translations"][0], "light")
    assert has(body["translations"][0], "day")  # the glossary's "beginning" -> "day"
    assert body["constraints_met"] == [3, 0, None] and body["constraints"] == [3, 0, None]  # "": no search
    assert body["engines"] == ["torch", "torch", None]
    detailed = client.post("/translate", json={"text": TEXTS[:1], "constraints": CONSTRAINTS[:1],
                                               "confidence": True}).json()  # fmt: skip
    assert (
        detailed["translations"][0]["constraints_met"] == 3
        and detailed["translations"][0]["engine"] == "torch"
    )


def test_avoided_phrases_stay_out(client, translator):
    plain = client.post("/translate", json={"text": TEXTS[1:2]}).json()["translations"][0]
    assert has(plain, "heaven")
    answer = client.post("/translate", json={"text": TEXTS[1:2], "avoid": ["heaven"]}).json()
    assert answer["translations"] == translator.translate(TEXTS[1:2], avoid=["heaven"])
    assert not has(answer["translations"][0], "heaven")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"text": TEXTS, "constraints": [["god"]]}, r'"constraints" must hold one list of phrases per'),
        ({"text": TEXTS, "constraints": ["god", [], []]}, r'"constraints" of sentence 0 must be a list'),
        ({"text": TEXTS, "avoid": "god"}, r'"avoid" must be a list of strings'),
        ({"text": TEXTS, "constraints": [[], ["a", "b"], []], "beam_size": 1},
         r"the constraints of sentence 1: 2 phrases, more than the beam of 1"),
        ({"text": TEXTS, "constraints": [["god", ""], [], []]}, r"sentence 0: a phrase is empty"),
    ],
)  # fmt: skip
def test_bad_constraints_are_a_422_naming_the_sentence(client, body, message):
    answer = client.post("/translate", json=body)
    assert answer.status_code == 422 and re.search(message, answer.json()["error"]), answer.text


def test_requests_with_and_without_constraints_share_a_batch_and_get_their_own_answers(checkpoint):
    batcher = BatchingTranslator(
        lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS),
        batch_wait_ms=200,
        max_batch_wait_ms=400,
    )
    own = batcher.translator
    encoded = own.encode(TEXTS[:2])
    wanted, _ = own.encode_constraints(TEXTS[:2], encoded, constraints=CONSTRAINTS[:2])

    async def both():
        return await asyncio.gather(
            batcher.translate(encoded, own.options, constraints=wanted),
            batcher.translate(encoded, own.options),
        )

    try:
        constrained, plain = asyncio.run(both())
    finally:
        batcher.close()
    assert batcher.stats.batches == 1
    assert [t.text for t in constrained[0]] + [t.text for t in constrained[1]] == own.translate(
        TEXTS[:2], constraints=CONSTRAINTS[:2]
    )
    assert [ranked[0][0] for ranked in plain] == own.translate(TEXTS[:2])

"""seq2seq-serve's "constraints" and "avoid" fields and its glossary: the answers equal the Translator's,
say how many phrases each translation met and which engine found it; a bad constraint is a 422 naming its
sentence and costs no other request its answer. The app runs in this process under FastAPI's TestClient."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.glossary import Glossary
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import HTTPError, Limits, parse_request

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
    answer = client.post("/translate", json={"texts": TEXTS, "constraints": CONSTRAINTS})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["translations"] == [str(t) for t in translator.translate(TEXTS, constraints=CONSTRAINTS)]
    assert has(body["translations"][0], "god") and has(body["translations"][0], "light")
    assert has(body["translations"][0], "day")  # the glossary's "beginning" -> "day"
    assert body["constraints_met"] == [3, 0, None] and body["constraints_total"] == [
        3,
        0,
        None,
    ]  # "": no search
    assert body["constraints"] == body["constraints_total"]  # the deprecated old name, for one release
    assert body["engines"] == ["torch", "torch", None]
    detailed = client.post("/translate", json={"texts": TEXTS[:1], "constraints": CONSTRAINTS[:1],
                                               "confidence": True}).json()  # fmt: skip
    assert (
        detailed["translations"][0]["constraints_met"] == 3
        and detailed["translations"][0]["engine"] == "torch"
    )


def test_avoided_phrases_stay_out(client, translator):
    plain = client.post("/translate", json={"texts": TEXTS[1:2]}).json()["translations"][0]
    assert has(plain, "heaven")
    answer = client.post("/translate", json={"texts": TEXTS[1:2], "avoid": ["heaven"]}).json()
    assert answer["translations"] == [str(t) for t in translator.translate(TEXTS[1:2], avoid=["heaven"])]
    assert not has(answer["translations"][0], "heaven")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"texts": TEXTS, "constraints": [["god"]]}, r'"constraints" must hold one list of phrases per'),
        ({"texts": TEXTS, "constraints": ["god", [], []]}, r'"constraints" of sentence 0 must be a list'),
        ({"texts": TEXTS, "avoid": "god"}, r'"avoid" must be a list of strings'),
        ({"texts": TEXTS, "constraints": [[], ["a", "b"], []], "beam_size": 1},
         r"the constraints of sentence 1: 2 phrases, more than the beam of 1"),
        ({"texts": TEXTS, "constraints": [["god", ""], [], []]}, r"sentence 0: a phrase is empty"),
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
    async def both():
        return await asyncio.gather(
            batcher.translate(own.encode(TEXTS[:2], constraints=CONSTRAINTS[:2])),
            batcher.translate(own.encode(TEXTS[:2])),
        )

    try:
        constrained, plain = asyncio.run(both())
    finally:
        batcher.close()
    assert batcher.stats.batches == 1
    alone = own.translate(TEXTS[:2], constraints=CONSTRAINTS[:2])
    assert [t.text for t in constrained[0]] + [t.text for t in constrained[1]] == [str(t) for t in alone]
    assert [str(ranked[0]) for ranked in plain] == [str(t) for t in own.translate(TEXTS[:2])]
    assert all(ranked[0].constraints_total is None for ranked in plain)  # a batch-mate's constraints: not its


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"texts": ["a", "b"], "constraints": [[], ["god", "ok \\ud800"]]}',
         '"constraints" of sentence 1: phrase 1 is not valid Unicode: a lone surrogate at character 3'),
        (b'{"texts": "a", "avoid": ["god", "\\udfff"]}',
         '"avoid" phrase 1 is not valid Unicode: a lone surrogate at character 0'),
    ],
)  # fmt: skip
def test_a_lone_surrogate_in_a_phrase_is_a_422_like_one_in_text(client, body, message):
    answer = client.post("/translate", content=body, headers=JSON)
    assert answer.status_code == 422 and answer.json() == {"error": message}, answer.text


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"texts": ["a", "b"], "constraints": [[], ["god"] * 3]}, 422,
         '"constraints" of sentence 1 has 3 phrases; the limit is max_phrases=2'),
        ({"texts": "a", "avoid": ["x", "y", "z"]}, 422, '"avoid" has 3 phrases; the limit is max_phrases=2'),
        ({"texts": ["a"], "constraints": [["god", "light " * 2]]}, 413,
         '"constraints" of sentence 0: phrase 1 has 12 characters; the limit is max_phrase_chars=10'),
        ({"texts": "a", "avoid": ["heaven and earth"]}, 413,
         '"avoid" phrase 0 has 16 characters; the limit is max_phrase_chars=10'),
    ],
)  # fmt: skip
def test_phrases_over_the_limits_are_refused_naming_the_setting(body, status, message):
    limits = Limits(max_phrases=2, max_phrase_chars=10)
    with pytest.raises(HTTPError) as refused:
        parse_request(json.dumps(body).encode(), limits, SearchOptions(beam_size=5))
    assert (refused.value.status, refused.value.message) == (status, message)


def test_the_default_limits_refuse_an_oversized_phrase_before_any_search(client):
    phrase = " ".join(["god created light"] * 1000)
    answer = client.post("/translate", json={"texts": "in the beginning", "constraints": [[phrase]]})
    assert answer.status_code == 413 and "max_phrase_chars=100" in answer.json()["error"]
    many = client.post("/translate", json={"texts": "in the beginning", "avoid": ["god"] * 17})
    assert many.status_code == 422 and "max_phrases=16" in many.json()["error"]


def test_constraint_fields_are_answered_when_the_first_text_is_empty(client, translator):
    texts, constraints = ["", TEXTS[0]], [[], ["god"]]
    answer = client.post("/translate", json={"texts": texts, "constraints": constraints})
    assert answer.status_code == 200, answer.text
    expected = translator.translate(texts, constraints=constraints, confidence=True)
    assert answer.json()["translations"] == [translation.text for translation in expected]
    assert answer.json()["constraints_met"] == [None, expected[1].constraints_met] == [None, 2]
    assert answer.json()["constraints"] == [None, 2] and answer.json()["engines"] == [None, "torch"]


def test_a_failure_the_constraints_cause_names_their_sentence(checkpoint):
    # Sampling cannot take constraints: the search fails, and so does sentence 1 searched alone with them.
    batcher = BatchingTranslator(
        lambda: Translator.from_checkpoint(checkpoint, options={**OPTIONS, "sampling": True})
    )
    own = batcher.translator
    texts = TEXTS[:2]
    prepared = own.encode(texts, constraints=[[], ["god"]])
    try:
        with pytest.raises(HTTPError) as failed:
            asyncio.run(batcher.translate(prepared))
    finally:
        batcher.close()
    assert failed.value.status == 422
    assert failed.value.message.startswith("sentence 1: constraints need beam or greedy search")


def test_a_phrase_holding_an_avoided_one_is_a_422_naming_both(client):
    """As the Translator and seq2seq-translate do: it could never be written."""
    body = {"texts": ["the night was good", "water and land"], "constraints": [[], ["light", "god water"]]}
    answer = client.post("/translate", json={**body, "avoid": ["water"]})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == (
        "the constraints of sentence 1: the phrase 'god water' contains the avoided phrase 'water', so it "
        "can never be written; drop one of the two"
    )
    assert client.post("/translate", json={**body, "avoid": ["earth"]}).status_code == 200

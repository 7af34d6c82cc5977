"""Markup in texts whose languages are chosen per line (seq2seq-translate language_columns) or per request
(the server): the tags go where a Translator for those languages puts them. Each source's own language
code is left out of the alignment, however many codes the Translator doing the putting back has in its
own prefix (none, for one of our multilingual models with no language recorded)."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from multilingual_model import OPTIONS, own_multilingual_checkpoint
from tiny_models import sentences

from seq2seq.cli.language_columns import encode_per_language
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.translator import Translator

SEARCH = SearchOptions(beam_size=2, **OPTIONS)
PAIRS = [("en", "es"), ("es", "fr")]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("own") / "model.pt")


def post_together(client, bodies: list[dict]) -> list:
    """Every body posted at the same moment (so that the requests meet in one batch)."""
    barrier = threading.Barrier(len(bodies))

    def post(body: dict):
        barrier.wait()
        return client.post("/translate", json=body)

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(post, bodies))


def marked_texts(count: int) -> list[str]:
    """Sentences with a <b> pair around some words and, in half of them, an image tag first."""
    rng, texts = random.Random(0), []
    for sentence in sentences(count, 5):
        words = sentence.split()
        first = rng.randrange(len(words))
        last = rng.randrange(first, len(words))
        words[first], words[last] = "<b>" + words[first], words[last] + "</b>"
        texts.append(('<img src="x"> ' if rng.random() < 0.5 else "") + " ".join(words))
    return texts


def test_language_columns_put_markup_where_one_language_call_does(checkpoint):
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    texts = marked_texts(40)
    languages = [PAIRS[index % 2] for index in range(len(texts))]
    encoded, prefixes = encode_per_language(translator, texts, languages)
    found = translator.search(encoded.sources, prefixes=prefixes, max_tokens=64)
    mixed = [ranked[0].text for ranked in translator.translations(encoded, found, confidence=False)]
    alone = [translator.translate([text], src_lang=src, tgt_lang=tgt)[0].text
             for text, (src, tgt) in zip(texts, languages)]  # fmt: skip
    assert mixed == alone  # 4 of these 40 lines had their tags elsewhere when the code was aligned too


def test_requests_naming_their_languages_put_markup_where_the_translator_does(checkpoint):
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    texts = marked_texts(12)
    bodies = [{"texts": texts, "src_lang": src, "tgt_lang": tgt, "beam_size": 2} for src, tgt in PAIRS]
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.metrics import Metrics
    from seq2seq.serve.requests import Limits

    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=SEARCH),
                                 batch_wait_ms=300, max_batch_wait_ms=2000)  # fmt: skip
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as client:
        responses = post_together(client, bodies)
        assert client.get("/stats").json()["largest_batch_requests"] > 1
    for body, response in zip(bodies, responses):
        assert response.status_code == 200, response.text
        expected = translator.translate(texts, src_lang=body["src_lang"], tgt_lang=body["tgt_lang"])
        assert response.json()["translations"] == [t.text for t in expected]

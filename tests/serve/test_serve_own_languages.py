"""seq2seq-serve on one of our own multilingual models (language tokens in its sentencepiece model):
requests for different languages share a batch and get what the Translator gives each alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from multilingual_model import OPTIONS, own_multilingual_checkpoint, tagged_sentences
from test_serve_languages import TEXTS, post_together, serve

from seq2seq import Translator


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("own") / "model.pt")


def test_requests_for_several_languages_share_a_batch_and_answer_as_the_translator(checkpoint: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    bodies = [
        {"texts": TEXTS[:2], "src_lang": "en", "tgt_lang": "fr"},
        {"texts": TEXTS[1:], "src_lang": "en", "tgt_lang": "es"},
        {"texts": TEXTS, "src_lang": "es", "tgt_lang": "en"},
    ]
    with serve(checkpoint, batch_wait_ms=300, max_batch_wait_ms=2000) as client:
        responses = post_together(client, bodies)
        assert [r.status_code for r in responses] == [200] * 3, [r.text for r in responses]
        assert client.get("/stats").json()["largest_batch_requests"] > 1
        missing = client.post("/translate", json={"texts": TEXTS})
    for body, response in zip(bodies, responses):
        expected = translator.translate(body["texts"], src_lang=body["src_lang"], tgt_lang=body["tgt_lang"])
        assert response.json()["translations"] == [t.text for t in expected]
    assert missing.status_code == 422
    expected_error = "this model reads 3 languages and none was chosen; pass src_lang= one of en, es, fr"
    assert missing.json()["error"] == expected_error


def test_markup_in_requests_for_several_languages_goes_where_the_translator_puts_it(checkpoint: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    texts = tagged_sentences(12)
    bodies = [{"texts": texts, "src_lang": src, "tgt_lang": tgt} for src, tgt in (("en", "es"), ("es", "fr"))]
    with serve(checkpoint, batch_wait_ms=300, max_batch_wait_ms=2000) as client:
        responses = post_together(client, bodies)
        assert client.get("/stats").json()["largest_batch_requests"] > 1
    for body, response in zip(bodies, responses):
        assert response.status_code == 200, response.text
        expected = translator.translate(texts, src_lang=body["src_lang"], tgt_lang=body["tgt_lang"])
        assert response.json()["translations"] == [t.text for t in expected]

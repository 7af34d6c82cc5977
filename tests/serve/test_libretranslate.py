"""The LibreTranslate API of seq2seq-serve (seq2seq.serve.libretranslate): requests shaped as its clients
send them, each answered as our own API answers the same request; and libretranslatepy, the PyPI
client, against a running server."""

from __future__ import annotations

from pathlib import Path
from urllib.error import HTTPError

import pytest
from fastapi.testclient import TestClient
from multilingual_model import own_multilingual_checkpoint

from seq2seq import Translator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.libretranslate import PREFIX
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

OPTIONS = {"beam_size": 3, "max_len_a": 0.0, "max_len_b": 8}
KEY = "a-test-key"
ENGLISH = "In the beginning God created the heaven and the earth, and the light was good."
GERMAN = "Der Mann sieht den Hund und die Frau im Garten, und sie lachen."  # a language the model lacks
SPANISH = "En el principio creó Dios los cielos y la tierra, y la luz era buena."


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("lt") / "model.pt")


@pytest.fixture(scope="module")
def client(checkpoint: Path):
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name="model.pt", limits=Limits(max_chars=200), metrics=Metrics(), api_key=KEY,
                     error_delay_ms=0)  # fmt: skip
    with TestClient(app) as test_client:
        yield test_client


def ours(client: TestClient, body: dict) -> list:
    answer = client.post("/translate", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["translations"]


def test_a_request_shaped_as_mastodon_sends_it(client: TestClient) -> None:
    """JSON, q as a list, source auto, format html, the API key as a field; checked field by field."""
    texts = [ENGLISH, f"<p>{SPANISH}</p>"]
    body = {"q": texts, "source": "auto", "target": "fr", "format": "html", "api_key": KEY}
    answer = client.post(f"{PREFIX}/translate", json=body)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert set(found) == {"translatedText", "detectedLanguage"}
    assert [item["language"] for item in found["detectedLanguage"]] == ["en", "es"]
    assert all(0 < item["confidence"] <= 100 for item in found["detectedLanguage"])
    expected = ours(client, {"texts": texts, "src_lang": ["en", "es"], "tgt_lang": "fr", "markup": "true"})
    assert found["translatedText"] == expected and found["translatedText"][1].startswith("<p>")
    detected = ours(client, {"texts": texts, "src_lang": "auto", "tgt_lang": "fr", "markup": "true"})
    assert detected == expected  # our own API's src_lang=auto: the same detection, per text


def test_a_form_with_one_text_and_alternatives(client: TestClient) -> None:
    form = {"q": ENGLISH, "source": "en", "target": "es", "alternatives": "2", "api_key": KEY}
    found = client.post(f"{PREFIX}/translate", data=form).json()
    [nbest] = ours(
        client, {"texts": [ENGLISH], "src_lang": "en", "tgt_lang": "es", "nbest": 3, "markup": False}
    )
    assert found["translatedText"] == nbest[0]["text"]
    assert found["alternatives"] == list(
        dict.fromkeys(r["text"] for r in nbest[1:] if r["text"] != nbest[0]["text"])
    )


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"q": "x", "source": "en", "target": "es", "api_key": "wrong"}, 403, "Invalid API key"),
        ({"q": "x", "source": "en", "target": "es"}, 403, "Invalid API key"),
        ({"source": "en", "target": "es", "api_key": KEY}, 400, "Invalid request: missing q parameter"),
        ({"q": "x", "source": "de", "target": "es", "api_key": KEY}, 400, "de is not supported; this server "
         "translates from en, es, fr"),
        ({"q": "x", "source": "en", "target": "de", "api_key": KEY}, 400, "en -> de is not supported; this "
         "server translates en/es/fr -> en/es/fr"),
        ({"q": "x" * 201, "source": "en", "target": "es", "api_key": KEY}, 400, "Invalid request: request "
         "(201) exceeds text limit (200)"),
        ({"q": "x", "source": "en", "target": "es", "format": "xml", "api_key": KEY}, 400, "Invalid request: "
         "format 'xml' is not supported; use text or html"),
        ({"q": [GERMAN], "source": "auto", "target": "es", "api_key": KEY}, 400,
         "sentence 0 reads as German (de); this server translates from en, es, fr only"),
    ],
)  # fmt: skip
def test_refusals_are_libretranslates(client: TestClient, body: dict, status: int, error: str) -> None:
    answer = client.post(f"{PREFIX}/translate", json=body)
    assert (answer.status_code, answer.json()) == (status, {"error": error})


def test_languages_detect_and_settings(client: TestClient) -> None:
    languages = client.get(f"{PREFIX}/languages").json()
    assert languages == [
        {"code": "en", "name": "English", "targets": ["es", "fr"]},
        {"code": "es", "name": "Spanish", "targets": ["en", "fr"]},
        {"code": "fr", "name": "French", "targets": ["en", "es"]},
    ]
    detected = client.post(f"{PREFIX}/detect", json={"q": SPANISH, "api_key": KEY}).json()
    assert detected[0]["language"] == "es" and 0 < detected[0]["confidence"] <= 100
    settings = client.get(f"{PREFIX}/frontend/settings").json()
    assert settings["charLimit"] == 200 and settings["keyRequired"] is True
    assert settings["filesTranslation"] is True  # seq2seq.serve.libretranslate_files
    assert settings["supportedFilesFormat"] == [".txt", ".html", ".htm", ".xlf", ".xliff", ".po"]


@pytest.mark.slow
def test_the_libretranslatepy_client_against_a_running_server(checkpoint: Path) -> None:
    from libretranslatepy import LibreTranslateAPI
    from serving import Server

    server = Server(checkpoint, "decode.beam_size=3", "decode.max_len_b=8")
    try:
        client = LibreTranslateAPI(f"{server.url}{PREFIX}/")
        expected = Translator.from_checkpoint(checkpoint, options=OPTIONS).translate(
            [ENGLISH], src_lang="en", tgt_lang="es", markup="false"
        )
        assert client.translate(ENGLISH, "en", "es") == expected[0].text
        assert client.detect(SPANISH)[0]["language"] == "es"
        assert [language["code"] for language in client.languages()] == ["en", "es", "fr"]
        with pytest.raises(HTTPError) as unknown:
            client.translate(ENGLISH, "en", "de")
        assert unknown.value.code == 400
    finally:
        server.stop()


def test_a_paragraph_is_split_into_sentences_by_default(client: TestClient) -> None:
    paragraph = f"{ENGLISH} {SPANISH}\nAnd the light was good."
    found = client.post(
        f"{PREFIX}/translate", json={"q": paragraph, "source": "en", "target": "es", "api_key": KEY}
    )
    body = {"texts": [paragraph], "src_lang": "en", "tgt_lang": "es", "markup": False, "segment": "sentences"}
    [expected] = ours(client, body)
    assert found.json()["translatedText"] == expected and "\n" in expected

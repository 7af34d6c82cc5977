"""Several models behind one server (seq2seq.serve.served_models): each text goes to the first model that
serves its language pair and gets what that model's Translator gives it; a request mixing pairs is
searched by each model and answered in order; an unknown pair is refused naming the pairs served (422 in
our API, 400 in the LibreTranslate API); /languages and /health list every model; src_lang=auto routes
by the detected language. The command line: models=, a refusal for one model's files, and a server's
src_lang=auto."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from multilingual_model import own_multilingual_checkpoint
from serving import SERVE, Server
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.libretranslate import PREFIX
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits
from seq2seq.serve.served_models import ServedModel, ServedModels, model_names

OPTIONS = {"beam_size": 2, "max_len_a": 0.0, "max_len_b": 8}
ENGLISH = ["In the beginning God created the heaven and the earth.", "the night was good"]
SPANISH = "En el principio creó Dios los cielos y la tierra, y la luz era buena."


def one_pair(path: Path, src: str, tgt: str, seed: int) -> Path:
    """A tiny one-pair model whose training config recorded src -> tgt."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, seed=seed, sharpness=4.0)
    config = {"data": {"src_lang": src, "tgt_lang": tgt}}
    return save_tiny_checkpoint(path, model, tokenizer, step=seed, config=config)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """en -> es (seed 1), a second en -> es (seed 2, listed later: never chosen), en -> de, and a
    multilingual model of en, es and fr."""
    directory = tmp_path_factory.mktemp("models")
    return {
        "en-es": one_pair(directory / "en-es.pt", "en", "es", 1),
        "en-es-2": one_pair(directory / "en-es-2.pt", "en", "es", 2),
        "en-de": one_pair(directory / "en-de.pt", "en", "de", 3),
        "many": own_multilingual_checkpoint(directory / "many.pt"),
    }


@pytest.fixture(scope="module")
def translators(checkpoints: dict[str, Path]) -> dict[str, Translator]:
    return {name: Translator.from_checkpoint(path, options=OPTIONS) for name, path in checkpoints.items()}


@pytest.fixture(scope="module")
def client(checkpoints: dict[str, Path], translators: dict[str, Translator]):
    served = [
        ServedModel(name, BatchingTranslator(lambda name=name: translators[name]))
        for name in ("en-es", "en-de", "en-es-2", "many")
    ]
    app = create_app(ServedModels(served), limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as test_client:
        yield test_client


def best(translations: list) -> list[str]:
    return [translation.text for translation in translations]


def translate(client: TestClient, body: dict) -> dict:
    answer = client.post("/translate", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_each_text_goes_to_the_first_model_of_its_pair(client, translators) -> None:
    mixed = translate(client, {"texts": ENGLISH * 2, "src_lang": "en", "tgt_lang": ["es", "de", "fr", "es"]})
    by_model = {
        "en-es": best(translators["en-es"].translate(ENGLISH)),
        "en-de": best(translators["en-de"].translate(ENGLISH)),
        "many": best(translators["many"].translate(ENGLISH, src_lang="en", tgt_lang="fr")),
    }
    assert mixed["models"] == ["en-es", "en-de", "many", "en-es"]
    assert mixed["model"] == "en-es+en-de+many"
    assert mixed["translations"] == [
        by_model["en-es"][0], by_model["en-de"][1], by_model["many"][0], by_model["en-es"][1]
    ]  # fmt: skip
    assert by_model["en-es"] != best(
        translators["en-es-2"].translate(ENGLISH)
    )  # the later en -> es model differs
    spanish = translate(client, {"texts": ENGLISH, "src_lang": "en", "tgt_lang": "es", "nbest": 2})
    assert spanish["models"] == ["en-es", "en-es"]
    assert [[row["text"] for row in nbest] for nbest in spanish["translations"]] == [
        [t.text for t in first.nbest] for first in translators["en-es"].translate(ENGLISH, nbest=2)
    ]


def test_a_request_naming_no_language_goes_to_the_first_model(client, translators) -> None:
    answer = translate(client, {"texts": ENGLISH})
    assert answer["models"] == ["en-es", "en-es"]
    assert answer["translations"] == best(translators["en-es"].translate(ENGLISH))
    french = translate(client, {"texts": ENGLISH, "src_lang": "es", "tgt_lang": "fr"})
    assert french["translations"] == best(
        translators["many"].translate(ENGLISH, src_lang="es", tgt_lang="fr")
    )


def test_an_unknown_pair_names_the_pairs_served(client) -> None:
    served = "this server translates en -> es, en -> de, en -> es, en/es/fr -> en/es/fr"
    answer = client.post("/translate", json={"texts": ENGLISH, "tgt_lang": ["es", "it"]})
    assert answer.status_code == 422
    assert answer.json() == {"error": f"any -> it is not served here; {served}"}
    refused = client.post(f"{PREFIX}/translate", json={"q": "x", "source": "fr", "target": "de"})
    assert refused.status_code == 400
    assert refused.json() == {"error": f"fr -> de is not supported; {served}"}


def test_languages_and_health_list_every_model(client) -> None:
    languages = client.get(f"{PREFIX}/languages").json()
    assert [(item["code"], item["targets"]) for item in languages] == [
        ("en", ["de", "es", "fr"]), ("es", ["en", "fr"]), ("fr", ["en", "es"])
    ]  # fmt: skip
    health = client.get("/health").json()
    assert health["model"] == "en-es" and health["src_lang"] == "en" and health["tgt_lang"] == "es"
    assert [(m["name"], m["src_langs"], m["tgt_langs"]) for m in health["models"]] == [
        ("en-es", ["en"], ["es"]), ("en-de", ["en"], ["de"]), ("en-es-2", ["en"], ["es"]),
        ("many", ["en", "es", "fr"], ["en", "es", "fr"]),
    ]  # fmt: skip


def test_auto_routes_by_the_detected_language(client, translators) -> None:
    answer = translate(client, {"texts": [ENGLISH[0], SPANISH], "src_lang": "auto", "tgt_lang": "fr"})
    assert answer["models"] == ["many", "many"]
    assert answer["translations"] == best(
        translators["many"].translate([ENGLISH[0], SPANISH], src_lang=["en", "es"], tgt_lang="fr")
    )
    lt = client.post(
        f"{PREFIX}/translate", json={"q": [ENGLISH[0], SPANISH], "source": "auto", "target": "es"}
    )
    assert (lt.status_code, lt.json()["error"]) == (
        400,
        "es -> es is not served here; this server translates "
        "en -> es, en -> de, en -> es, en/es/fr -> en/es/fr",
    )
    english = client.post(f"{PREFIX}/translate", json={"q": ENGLISH, "source": "auto", "target": "es"})
    assert english.json()["translatedText"] == best(translators["en-es"].translate(ENGLISH))
    assert [item["language"] for item in english.json()["detectedLanguage"]] == ["en", "en"]


def test_a_servers_src_lang_auto_detects_texts_naming_none(translators) -> None:
    served = ServedModels(
        [ServedModel("many", BatchingTranslator(lambda: translators["many"]))], src_lang="auto"
    )
    app = create_app(served, limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as client:
        answer = translate(client, {"texts": [ENGLISH[0], SPANISH], "tgt_lang": "fr"})
        named = translate(
            client, {"texts": [ENGLISH[0], SPANISH], "src_lang": ["es", "en"], "tgt_lang": "fr"}
        )
    assert answer["translations"] == best(
        translators["many"].translate([ENGLISH[0], SPANISH], src_lang=["en", "es"], tgt_lang="fr")
    )
    assert named["translations"] == best(
        translators["many"].translate([ENGLISH[0], SPANISH], src_lang=["es", "en"], tgt_lang="fr")
    )  # a request's own src_lang wins


def test_model_names_tell_apart_files_of_one_name() -> None:
    assert model_names([["runs/a/best.pt"], ["runs/b/best.pt"], ["x.pt", "y.pt"]]) == [
        "a/best.pt", "b/best.pt", "x.pt+y.pt"
    ]  # fmt: skip


@pytest.mark.slow
def test_the_command_serves_several_models(checkpoints) -> None:
    server = Server(checkpoints["en-es"], f"models=[{checkpoints['en-de']}]", "decode.beam_size=2",
                    "decode.max_len_b=8")  # fmt: skip
    try:
        health = httpx.get(f"{server.url}/health").json()
        assert [model["name"] for model in health["models"]] == ["en-es.pt", "en-de.pt"]
        answer = httpx.post(f"{server.url}/translate", json={"texts": ENGLISH, "tgt_lang": "de"}).json()
        assert answer["models"] == ["en-de.pt", "en-de.pt"]
    finally:
        assert server.stop() == 0


@pytest.mark.slow
def test_one_models_files_are_refused_with_several(checkpoints, tmp_path: Path) -> None:
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("God\tDios\n", encoding="utf-8")
    command = [*SERVE, f"checkpoint={checkpoints['en-es']}", f"models=[{checkpoints['en-de']}]",
               f"glossary={glossary}", "port=0"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: glossary= belongs to one model and this server has 2 (models=); serve that model on a "
        "server of its own"
    )


@pytest.mark.slow
def test_the_commands_src_lang_auto(checkpoints, translators) -> None:
    server = Server(checkpoints["many"], "src_lang=auto", "tgt_lang=fr", "decode.beam_size=2",
                    "decode.max_len_b=8")  # fmt: skip
    try:
        answer = httpx.post(f"{server.url}/translate", json={"texts": [ENGLISH[0], SPANISH]}).json()
    finally:
        assert server.stop() == 0
    assert answer["translations"] == best(
        translators["many"].translate([ENGLISH[0], SPANISH], src_lang=["en", "es"], tgt_lang="fr")
    )

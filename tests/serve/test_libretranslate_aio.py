"""libretranslate-aio, the PyPI client on httpx (its AsyncLibreTranslate), against a running seq2seq-serve:
each of its calls answered as our own API answers the same request (POST /translate, GET /health), its
refusals raised as its own exceptions where our API refuses too; and the manual's example of it, run as
written."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostile_documents import PAGE
from multilingual_model import own_multilingual_checkpoint

pytest.importorskip("libretranslate_aio", reason="needs the test extra: pip install '.[test]'")

from libretranslate_aio import AsyncLibreTranslate, BadRequestError, ForbiddenError

from seq2seq.inference.api import detect
from seq2seq.serve.libretranslate import PREFIX
from seq2seq.serve.libretranslate_files import EXTENSIONS

pytestmark = pytest.mark.slow  # a server process

KEY = "a-test-key"
ENGLISH = "In the beginning God created the heaven and the earth, and the light was good."
SECOND = "And the earth was without form, and void. And darkness was upon the face of the deep."
SPANISH = "En el principio creó Dios los cielos y la tierra, y la luz era buena."
DOCS = Path(__file__).resolve().parents[2] / "docs" / "libretranslate.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    from serving import Server

    checkpoint = own_multilingual_checkpoint(tmp_path_factory.mktemp("lt-aio") / "model.pt")
    running = Server(checkpoint, "decode.beam_size=3", "decode.max_len_b=8", "max_chars=200",
                     "api_key_env=LT_TEST_KEY", env={"LT_TEST_KEY": KEY})  # fmt: skip
    yield running
    running.stop()


def call(server: Any, work: Callable[[AsyncLibreTranslate], Awaitable[Any]], *, key: str | None = KEY) -> Any:
    """`work(client)`'s result, with a client of the server's LibreTranslate API."""

    async def main() -> Any:
        async with AsyncLibreTranslate(f"{server.url}{PREFIX}", api_key=key) as client:
            return await work(client)

    return asyncio.run(main())


def ours(server: Any, body: dict, *, status: int = 200) -> Any:
    """Our own API's answer to `body`, with the LibreTranslate API's sentence splitting."""
    body = {"src_lang": "en", "tgt_lang": "es", "segment": "sentences", "markup": "false", **body}
    answer = httpx.post(f"{server.url}/translate", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == status, answer.text
    return answer.json()["translations"] if status == 200 else answer.json()


def test_a_string_a_list_and_html(server) -> None:
    one = call(server, lambda client: client.translate(ENGLISH, "en", "es"))
    assert [one.translated_text] == ours(server, {"texts": [ENGLISH]})
    assert one.detected_language is None and one.alternatives is None
    listed = call(server, lambda client: client.translate([ENGLISH, SECOND], "en", "fr"))
    assert listed.translated_text == ours(server, {"texts": [ENGLISH, SECOND], "tgt_lang": "fr"})
    page = f"<p>{ENGLISH} <b>{SECOND}</b></p>"
    html = call(server, lambda client: client.translate(page, "en", "es", format="html"))
    assert [html.translated_text] == ours(server, {"texts": [page], "markup": "true"})
    assert html.translated_text.startswith("<p>") and "<b>" in html.translated_text


def test_auto_detection_and_detect(server) -> None:
    found = call(server, lambda client: client.translate([ENGLISH, SPANISH], "auto", "fr"))
    assert [item.language for item in found.detected_language] == ["en", "es"]
    assert found.translated_text == ours(server, {"texts": [ENGLISH, SPANISH], "src_lang": ["en", "es"],
                                                  "tgt_lang": "fr"})  # fmt: skip
    assert found.translated_text == ours(
        server, {"texts": [ENGLISH, SPANISH], "src_lang": "auto", "tgt_lang": "fr"}
    )
    [detection] = call(server, lambda client: client.detect(SPANISH))
    [expected] = detect([SPANISH], ["en", "es", "fr"])  # what the server detects with
    assert (detection.language, detection.confidence) == ("es", round(100 * expected.confidence, 1))


def test_alternatives(server) -> None:
    found = call(server, lambda client: client.translate(ENGLISH, "en", "es", alternatives=2))
    [nbest] = ours(server, {"texts": [ENGLISH], "nbest": 3})
    assert found.translated_text == nbest[0]["text"]
    others = [r["text"] for r in nbest[1:] if r["text"] != nbest[0]["text"]]
    assert found.alternatives == list(dict.fromkeys(others))


def test_languages_and_settings(server) -> None:
    languages = call(server, lambda client: client.languages())
    [model] = httpx.get(f"{server.url}/health").json()["models"]
    assert [language.code for language in languages] == model["src_langs"] == ["en", "es", "fr"]
    assert all(sorted({*language.targets, language.code}) == model["tgt_langs"] for language in languages)
    assert [language.name for language in languages] == ["English", "Spanish", "French"]
    settings = call(server, lambda client: client.frontend_settings())
    assert (
        settings.supported_files_format
        == list(EXTENSIONS)
        == [".txt", ".html", ".htm", ".xlf", ".xliff", ".po"]
    )
    assert (settings.char_limit, settings.key_required, settings.api_keys) == (200, True, True)


def test_a_file(server, tmp_path) -> None:
    path = tmp_path / "page.html"
    path.write_text(PAGE, encoding="utf-8")
    uploaded = call(server, lambda client: client.translate_file(path, "en", "es"))
    assert uploaded.translated_file_url.startswith(f"{server.url}{PREFIX}/download_file/")
    download = httpx.get(uploaded.translated_file_url)
    assert download.status_code == 200 and 'filename="page.html"' in download.headers["content-disposition"]
    assert [download.text] == ours(server, {"texts": [PAGE], "format": "html", "markup": None})
    assert httpx.get(uploaded.translated_file_url).status_code == 404  # downloaded once
    with path.open("rb") as opened:  # an open file, named by its path
        again = call(server, lambda client: client.translate_file(opened, "en", "es"))
    assert httpx.get(again.translated_file_url).text == download.text


@pytest.mark.parametrize(
    ("request_", "body", "error", "status", "message"),
    [
        ({"key": "wrong"}, {}, ForbiddenError, 401, "Invalid API key"),
        ({"key": None}, {}, ForbiddenError, 401, "Invalid API key"),
        ({"target": "de"}, {"tgt_lang": "de"}, BadRequestError, 422,
         "en -> de is not supported; this server translates en/es/fr -> en/es/fr"),
        ({"text": "x" * 201}, {"texts": ["x" * 201]}, BadRequestError, 413,
         "Invalid request: request (201) exceeds text limit (200)"),
    ],
)  # fmt: skip
def test_refusals(server, request_, body, error, status, message) -> None:
    """Each refused by the client's exception, with LibreTranslate's message; our API refuses it too."""
    asked = {"text": ENGLISH, "target": "es", "key": KEY, **request_}
    with pytest.raises(error) as refused:
        call(server, lambda client: client.translate(asked["text"], "en", asked["target"]), key=asked["key"])
    assert refused.value.message == message
    assert refused.value.status_code == {401: 403, 422: 400, 413: 400}[status]
    if status == 401:
        answer = httpx.post(f"{server.url}/translate", json={"texts": [ENGLISH]})
        assert answer.status_code == 401
    else:
        assert ours(server, {"texts": [ENGLISH], **body}, status=status)["error"]


def test_the_manuals_example_runs_as_written(server, tmp_path, monkeypatch, capsys) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), flags=re.S | re.M)
    [example] = [block for block in blocks if "AsyncLibreTranslate" in block]
    code = example.replace("http://localhost:8080", server.url).replace(
        'AsyncLibreTranslate("', f'AsyncLibreTranslate(api_key="{KEY}", base_url="'
    )
    (tmp_path / "letter.txt").write_text(f"{ENGLISH}\n\n{SECOND}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOCS), "exec"), {"__name__": "__docs__"})
    printed = capsys.readouterr().out.splitlines()
    [expected] = ours(server, {"texts": ["In the beginning God created the heaven and the earth."]})
    first, second = ours(server, {"texts": [ENGLISH, SECOND]})
    assert printed == [expected, first, "", second, ""]  # the file ends with a line break

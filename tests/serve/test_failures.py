"""Failures no well-formed request can cause on a real model, caused on purpose: the application runs in
a real uvicorn on a loopback port, over a stand-in Translator whose search fails for some inputs or
ends the model thread. Each request still gets its own JSON answer, and /health tells the truth."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import httpx
import pytest
import uvicorn
from serving import free_port

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.api import ModelLanguages, Prepared, Translation, TranslationRequest
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits


class Fatal(BaseException):
    """What no `except Exception` catches: it ends the model thread."""


class FlakyTranslator:
    """Echoes texts upper-cased, one character per token. A search containing "poison" raises a
    UserError (the request's fault), "crash" a RuntimeError (the server's), "fatal" ends the thread."""

    options, step, max_input_tokens, languages = SearchOptions(beam_size=1), 0, 100, None
    engine = SimpleNamespace(name="stand-in")

    def model_languages(self) -> ModelLanguages:
        return ModelLanguages(sources=(), targets=(), source_codes=False, target_codes=False)

    def prepare(self, request: TranslationRequest, **labels: object) -> Prepared:
        count = len(request.texts)
        return Prepared(
            sources=[[ord(c) for c in t.text] for t in request.texts],
            owners=list(range(count)),
            n_texts=count,
            options=request.options or self.options,
            prefixes=[[]] * count,
        )

    def search(self, prepared: Prepared, *, max_tokens: int, stop: object = None) -> list[str]:
        texts = ["".join(map(chr, source)) for source in prepared.sources]
        for word, error in (("poison", UserError("poison cannot be translated")),
                            ("crash", RuntimeError("a kernel failed")), ("fatal", Fatal())):  # fmt: skip
            if any(word in text for text in texts):
                raise error
        return [text.upper() for text in texts]

    def translations(self, prepared: Prepared, results: list[str]) -> list[list[Translation]]:
        return [[Translation(result, 0.0)] for result in results]


@pytest.fixture
def url() -> Iterator[str]:
    batcher = BatchingTranslator(FlakyTranslator, batch_wait_ms=300, max_batch_wait_ms=2000)
    app = create_app(batcher, name="stand-in", limits=Limits(), metrics=Metrics())

    @app.get("/bug")
    async def bug() -> None:  # a route with a bug: the catch-all must still answer JSON
        raise RuntimeError("a bug")

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.config.port}"
    server.should_exit = True
    thread.join(timeout=30)


def post_together(url: str, requests: list[dict]) -> list[httpx.Response]:
    barrier = threading.Barrier(len(requests))

    def post(request: dict) -> httpx.Response:
        barrier.wait()
        return httpx.post(f"{url}/translate", json=request, timeout=30)

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(post, requests))


@pytest.mark.slow
def test_a_failed_batch_is_retried_one_by_one_so_only_the_culprit_fails(url):
    requests = [{"texts": ["a", "b"]}, {"texts": ["c", "poison", "d"]}, {"texts": "crash"}, {"texts": "e"}]
    responses = post_together(url, requests)
    assert [r.status_code for r in responses] == [200, 422, 500, 200]
    assert responses[0].json()["translations"] == ["A", "B"] and responses[3].json()["translations"] == ["E"]
    assert responses[1].json() == {"error": "sentence 1: poison cannot be translated"}
    assert responses[2].json()["error"].startswith("the translation failed (RuntimeError)")
    stats = httpx.get(f"{url}/stats").json()
    assert stats["retried_batches"] == 1 and stats["failed_requests"] == 2
    bug = httpx.get(f"{url}/bug")
    assert bug.status_code == 500 and bug.json() == {
        "error": "internal error; the server log has the details"
    }
    assert httpx.get(f"{url}/nowhere").json() == {"error": "Not Found"}


@pytest.mark.slow
def test_health_is_503_once_the_model_thread_has_died(url):
    assert httpx.get(f"{url}/health").status_code == 200
    first = httpx.post(f"{url}/translate", json={"texts": "fatal"}, timeout=10)
    assert first.status_code == 503 and "model thread has stopped" in first.json()["error"]
    health = httpx.get(f"{url}/health")
    assert health.status_code == 503 and health.json()["status"] == "unhealthy"
    later = httpx.post(f"{url}/translate", json={"texts": "fine"}, timeout=10)  # answered, not left hanging
    assert later.status_code == 503
    metrics = httpx.get(f"{url}/metrics").text
    assert "seq2seq_model_thread_up 0.0" in metrics

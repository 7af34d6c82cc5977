"""A bad request never shares its failure: one real seq2seq-serve (long_lines=error) gets well-formed
requests together with bad ones that used to fail their whole batch or the server's JSON parser; each
gets its own answer, and /metrics counts what happened."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from serving import Server, scrape
from tiny_models import sentences

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions

JSON = {"Content-Type": "application/json"}
LONG = " ".join(["heaven and earth"] * 60)  # under max_chars (2000), over the model's 127 tokens


@pytest.fixture(scope="module")
def server(checkpoint: Path) -> Iterator[Server]:
    running = Server(checkpoint, "long_lines=error", "batch_wait_ms=300", "max_batch_wait_ms=2000")
    yield running
    running.stop()


def post_together(url: str, bodies: list[bytes]) -> list[httpx.Response]:
    """Every body posted at the same moment from its own thread (so they meet in one batch)."""
    barrier = threading.Barrier(len(bodies))

    def post(body: bytes) -> httpx.Response:
        barrier.wait()
        return httpx.post(f"{url}/translate", content=body, headers=JSON, timeout=60)

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(post, bodies))


@pytest.mark.slow
def test_a_bad_request_gets_its_own_4xx_and_never_fails_its_batch(server, checkpoint):
    good = sentences(6, seed=5)
    bodies = [json.dumps({"texts": [text]}).encode() for text in good]
    bodies.insert(
        2, json.dumps({"texts": [good[0], LONG]}).encode()
    )  # over the token limit: long_lines=error
    bodies.insert(5, b'{"texts": ["fine", "ok \\ud800"]}')  # a lone surrogate: valid JSON, not valid text
    before = httpx.get(f"{server.url}/stats").json()
    responses = post_together(server.url, bodies)
    answers = [response.json() for response in responses]  # every answer is JSON, never plain text
    long_answer, surrogate_answer = responses.pop(2), responses.pop(4)
    assert long_answer.status_code == 413, long_answer.text
    assert long_answer.json()["error"].startswith("sentence 1 has ")
    assert "the limit is 127" in long_answer.json()["error"]
    assert surrogate_answer.status_code == 422, surrogate_answer.text
    assert surrogate_answer.json()["error"].startswith("sentence 1 is not valid Unicode")
    options = SearchOptions(beam_size=5, max_len_a=0.0, max_len_b=12)
    expected = [str(t) for t in Translator.from_checkpoint(checkpoint, options=options).translate(good)]
    assert [r.status_code for r in responses] == [200] * len(good), answers
    assert [r.json()["translations"] for r in responses] == [[text] for text in expected]
    stats = httpx.get(f"{server.url}/stats").json()
    assert stats["requests"] - before["requests"] == len(good)  # the bad ones never reached the model
    assert stats["largest_batch_requests"] > 1 and stats["failed_requests"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("body", [b"[" * 200_000, b'{"texts": ' + b"[" * 200_000, b'{"a": ' * 40_000])
def test_deeply_nested_json_is_a_400(server, body):
    start = time.monotonic()
    response = httpx.post(f"{server.url}/translate", content=body, headers=JSON, timeout=60)
    assert time.monotonic() - start >= 0.1  # a refusal waits error_delay_ms (100): bad clients slow down
    assert response.status_code == 400, response.text[:300]
    assert response.json() == {"error": "the body is not valid JSON here: it is nested too deeply"}
    assert httpx.get(f"{server.url}/health").json()["status"] == "ok"


@pytest.mark.slow
def test_metrics_count_requests_errors_batches_queue_and_latency(server):
    before = scrape(server.url)
    bodies = [json.dumps({"texts": sentences(2, seed=k)}).encode() for k in range(3)] + [b'{"texts": 5}']
    assert [r.status_code for r in post_together(server.url, bodies)] == [200, 200, 200, 422]
    assert httpx.post(f"{server.url}/translate", content=b'{"texts": "a"}').status_code == 415
    after = scrape(server.url)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    assert grew("seq2seq_requests_total", status="200") == 3
    assert grew("seq2seq_requests_total", status="422") == 1
    assert grew("seq2seq_requests_total", status="415") == 1
    assert grew("seq2seq_request_seconds_count") == 5 and grew("seq2seq_request_seconds_sum") > 0
    assert grew("seq2seq_request_seconds_bucket", le="+Inf") == 5
    assert grew("seq2seq_sentences_total") == 6 and grew("seq2seq_batch_sentences_sum") == 6
    assert 1 <= grew("seq2seq_batch_requests_count") <= 3 and grew("seq2seq_batch_requests_sum") == 3
    assert after[("seq2seq_queue_depth", ())] == 0 and after[("seq2seq_model_thread_up", ())] == 1
    assert after[("process_resident_memory_bytes", ())] > 0

"""Overload on a real seq2seq-serve: a full queue is refused at once (503 + Retry-After), a request out of
time gets 504 and its queued work is dropped, so is the work of a client that disconnects, and a
second Ctrl-C ends the server at once, even in the middle of a search."""

from __future__ import annotations

import signal
import socket
import threading
import time

import httpx
import pytest
from serving import scrape
from tiny_models import sentences

JSON = {"Content-Type": "application/json"}


@pytest.mark.slow
def test_a_full_queue_is_503_and_late_or_abandoned_requests_are_dropped_unsearched(start_server):
    # Batches stay open 3 s, a request may take 1 s: every request here leaves before any search starts.
    server = start_server(
        "batch_wait_ms=3000", "max_batch_wait_ms=3000", "max_queue=2", "request_timeout_s=1"
    )
    answers: list[httpx.Response] = []

    def post(text: str) -> None:
        answers.append(httpx.post(f"{server.url}/translate", json={"texts": text}, timeout=30))

    waiting = [threading.Thread(target=post, args=(text,)) for text in sentences(2, seed=6)]
    for thread in waiting:
        thread.start()
    time.sleep(0.4)  # both wait in the open batch: the queue is full
    start = time.monotonic()
    refused = httpx.post(f"{server.url}/translate", json={"texts": "in the beginning"}, timeout=30)
    assert time.monotonic() - start < 0.5, "a full queue answers at once"
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "max_queue=2" in refused.json()["error"]
    for thread in waiting:
        thread.join()
    assert [answer.status_code for answer in answers] == [504, 504]
    assert "request_timeout_s=1" in answers[0].json()["error"]

    with httpx.Client(timeout=0.3) as client, pytest.raises(httpx.ReadTimeout):
        client.post(f"{server.url}/translate", json={"texts": "god created light"})  # then disconnects
    time.sleep(3.5)  # past the 3-s batch window: a search would have run by now
    stats = httpx.get(f"{server.url}/stats").json()
    assert stats["dropped"] == 3 and stats["batches"] == 0 and stats["requests"] == 0
    metrics = scrape(server.url)
    assert metrics[("seq2seq_requests_total", (("status", "499"),))] == 1  # the one that disconnected
    assert metrics[("seq2seq_requests_total", (("status", "504"),))] == 2
    assert metrics[("seq2seq_queue_depth", ())] == 0
    assert httpx.get(f"{server.url}/health").json()["status"] == "ok"


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once(start_server):
    server = start_server("decode.max_len_b=120")  # searches of ~0.5 s per request on this model
    # A client that sends half a body keeps the graceful stop waiting (up to request_timeout_s, 60 s);
    # meanwhile the model thread is in the middle of long searches.
    stalled = socket.create_connection(("127.0.0.1", server.port))
    stalled.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n{\"texts\": ")  # fmt: skip
    texts = sentences(64, seed=7)

    def heavy() -> None:
        try:
            httpx.post(f"{server.url}/translate", json={"texts": texts, "beam_size": 16}, timeout=60)
        except httpx.TransportError:
            pass  # the server exits under it

    clients = [threading.Thread(target=heavy, daemon=True) for _ in range(8)]
    for client in clients:
        client.start()
    time.sleep(1.0)
    server.process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert server.process.poll() is None, "the first Ctrl-C waits for the requests in flight"
    start = time.monotonic()
    server.process.send_signal(signal.SIGINT)
    status = server.process.wait(timeout=10)
    assert time.monotonic() - start < 3
    stalled.close()
    assert status == 128 + signal.SIGINT, server.output()[-3000:]
    assert "stopping at once" in server.output() and "Fatal Python error" not in server.output()

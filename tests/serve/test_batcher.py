"""The batcher on its own, over a stand-in Translator that records each search: when batches close,
which thread loads and runs the model, what a failed load does, and how a failure stays with its request:
a failed batch retried one by one, a full queue, a dropped request, a dead model thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.api import Prepared
from seq2seq.inference.confidence import Translation
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.requests import HTTPError

OPTIONS = SearchOptions()


def encode(*texts: str) -> Prepared:
    """Texts as a request's model input: one piece per text, its characters' codes as the tokens."""
    return Prepared(sources=[[ord(c) for c in text] for text in texts], owners=list(range(len(texts))),
                    n_texts=len(texts), options=OPTIONS, prefixes=[[] for _ in texts])  # fmt: skip


class RecordingTranslator:
    """Echoes each text upper-cased; records the texts of every search and the thread it ran on. A
    search with "poison" in it fails with a UserError (the request's fault), with "crash" a RuntimeError."""

    def __init__(self) -> None:
        self.searches: list[list[str]] = []
        self.threads: set[str] = {threading.current_thread().name}

    def search(self, prepared: Prepared, *, max_tokens: int, stop: object = None) -> list[str]:
        texts = ["".join(map(chr, source)) for source in prepared.sources]
        self.searches.append(texts)
        self.threads.add(threading.current_thread().name)
        if any("poison" in text for text in texts):
            raise UserError("poison cannot be translated")
        if any("crash" in text for text in texts):
            raise RuntimeError("the model crashed")
        return [text.upper() for text in texts]

    def translations(self, prepared: Prepared, results: list[str]) -> list[list[Translation]]:
        return [[Translation(result, 0.0)] for result in results]


async def send_spaced(batcher: BatchingTranslator, count: int, gap_seconds: float) -> list:
    """`count` one-sentence requests, one every `gap_seconds`, all awaited together."""
    tasks = []
    for index in range(count):
        tasks.append(asyncio.create_task(batcher.translate(encode(f"s{index}"))))
        await asyncio.sleep(gap_seconds)
    return await asyncio.gather(*tasks)


def run(batcher: BatchingTranslator, count: int, gap_seconds: float) -> list:
    try:
        return asyncio.run(send_spaced(batcher, count, gap_seconds))
    finally:
        batcher.close()


def test_a_burst_of_requests_shares_one_batch_while_they_keep_arriving() -> None:
    # Each request comes 40 ms after the previous one: longer than a fixed 5 ms wait would allow, but
    # within the 200 ms quiet gap, and all 8 within the 2 s cap: one search for all of them.
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=200, max_batch_wait_ms=2000)
    answers = run(batcher, 8, 0.04)
    assert translator.searches == [[f"s{i}" for i in range(8)]]
    assert answers == [[[Translation(f"S{i}", 0.0)]] for i in range(8)]


def test_a_batch_closes_at_its_cap_even_while_requests_keep_coming() -> None:
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=100, max_batch_wait_ms=150)
    answers = run(batcher, 8, 0.06)  # 8 requests 60 ms apart (~0.45 s); a batch closes 150 ms after its first
    sizes = [len(texts) for texts in translator.searches]
    assert len(sizes) >= 2 and sum(sizes) == 8
    assert [text for texts in translator.searches for text in texts] == [f"s{i}" for i in range(8)]
    assert answers == [[[Translation(f"S{i}", 0.0)]] for i in range(8)]


def test_a_quiet_gap_closes_the_batch() -> None:
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=20, max_batch_wait_ms=5000)
    run(batcher, 3, 0.4)  # far apart: each request is its own batch, long before the cap
    assert translator.searches == [["s0"], ["s1"], ["s2"]]


def test_the_model_is_loaded_and_run_on_the_worker_thread_only() -> None:
    loaded_on: list[str] = []

    def load() -> RecordingTranslator:
        loaded_on.append(threading.current_thread().name)
        return RecordingTranslator()

    batcher = BatchingTranslator(load, batch_wait_ms=1)
    translator = batcher.translator
    run(batcher, 2, 0.0)
    assert loaded_on == ["translation"] and translator.threads == {"translation"}


def test_a_failed_load_is_raised_by_the_constructor() -> None:
    def load() -> RecordingTranslator:
        raise FileNotFoundError("no such checkpoint: missing.pt")

    with pytest.raises(FileNotFoundError, match=r"missing\.pt"):
        BatchingTranslator(load)


def test_a_failed_batch_is_retried_one_by_one_and_only_the_culprit_fails() -> None:
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=300, max_batch_wait_ms=2000)
    requests = [encode("a", "b"), encode("c", "poison"), encode("crash"), encode("d")]

    async def send() -> list:
        tasks = [asyncio.create_task(batcher.translate(request)) for request in requests]
        return await asyncio.gather(*tasks, return_exceptions=True)

    try:
        answers = asyncio.run(send())
    finally:
        batcher.close()
    assert translator.searches[0] == ["a", "b", "c", "poison", "crash", "d"]  # one batch, which failed
    assert answers[0] == [[Translation("A", 0.0)], [Translation("B", 0.0)]] and answers[3] == [
        [Translation("D", 0.0)]
    ]
    assert isinstance(answers[1], HTTPError) and answers[1].status == 422
    assert answers[1].message == "sentence 1: poison cannot be translated"
    assert isinstance(answers[2], HTTPError) and answers[2].status == 500
    assert "RuntimeError" in answers[2].message and "crashed" not in answers[2].message
    assert batcher.stats.retried_batches == 1 and batcher.stats.failed_requests == 2


def test_a_full_queue_refuses_at_once_and_a_cancelled_request_is_never_searched() -> None:
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=400, max_batch_wait_ms=400, max_queue=2)

    async def send() -> tuple:
        first = asyncio.create_task(batcher.translate(encode("first")))
        second = asyncio.create_task(batcher.translate(encode("second")))
        await asyncio.sleep(0.1)  # both wait in the open batch
        with pytest.raises(HTTPError) as refused:
            await batcher.translate(encode("third"))
        second.cancel()  # its client has gone: dropped before the search
        await asyncio.sleep(0)
        waiting = batcher.waiting
        return await first, refused.value, waiting

    try:
        first, refused, waiting = asyncio.run(send())
    finally:
        batcher.close()
    assert refused.status == 503 and refused.headers == {"Retry-After": "1"}
    assert "max_queue=2" in refused.message and waiting == 1
    assert first == [[Translation("FIRST", 0.0)]] and translator.searches == [["first"]]
    assert batcher.stats.dropped == 1 and batcher.waiting == 0


class Fatal(BaseException):
    """Something no `except Exception` catches: it ends the model thread."""


def test_a_dead_model_thread_answers_503_and_says_so() -> None:
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=1)

    def search(*args: object, **kwargs: object) -> None:
        raise Fatal("the thread ends")

    translator.search = search  # type: ignore[method-assign]

    async def send() -> list:
        first = await asyncio.gather(batcher.translate(encode("a")), return_exceptions=True)
        later = await asyncio.gather(batcher.translate(encode("b")), return_exceptions=True)
        return first + later

    answers = asyncio.run(asyncio.wait_for(send(), timeout=10))  # nothing hangs
    assert [(type(a), a.status) for a in answers] == [(HTTPError, 503), (HTTPError, 503)]
    assert not batcher.healthy

"""The batcher on its own, over a stand-in Translator that records each search: when batches close,
which thread loads and runs the model, and what a failed load does."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from seq2seq.decode.options import SearchOptions
from seq2seq.serve.batcher import BatchingTranslator


class RecordingTranslator:
    """Echoes each text upper-cased; records the texts of every search and the thread it ran on."""

    def __init__(self) -> None:
        self.searches: list[list[str]] = []
        self.threads: set[str] = {threading.current_thread().name}

    def encode(self, texts: list[str]) -> SimpleNamespace:
        return SimpleNamespace(sources=texts)

    def search(self, texts: list[str], options: SearchOptions, *, max_tokens: int) -> list[str]:
        self.searches.append(list(texts))
        self.threads.add(threading.current_thread().name)
        return [text.upper() for text in texts]

    def join_pieces(self, encoded: SimpleNamespace, results: list[str]) -> list[list[tuple[str, float]]]:
        return [[(result, 0.0)] for result in results]


async def send_spaced(batcher: BatchingTranslator, count: int, gap_seconds: float) -> list:
    """`count` one-sentence requests, one every `gap_seconds`, all awaited together."""
    options = SearchOptions()
    tasks = []
    for index in range(count):
        tasks.append(asyncio.create_task(batcher.translate([f"s{index}"], options)))
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
    assert answers == [[[(f"S{i}", 0.0)]] for i in range(8)]


def test_a_batch_closes_at_its_cap_even_while_requests_keep_coming() -> None:
    translator = RecordingTranslator()
    batcher = BatchingTranslator(lambda: translator, batch_wait_ms=100, max_batch_wait_ms=150)
    answers = run(batcher, 8, 0.06)  # 8 requests 60 ms apart (~0.45 s); a batch closes 150 ms after its first
    sizes = [len(texts) for texts in translator.searches]
    assert len(sizes) >= 2 and sum(sizes) == 8
    assert [text for texts in translator.searches for text in texts] == [f"s{i}" for i in range(8)]
    assert answers == [[[(f"S{i}", 0.0)]] for i in range(8)]


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

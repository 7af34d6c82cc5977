"""A search whose every request has gone (504, or its client closed the connection) stops within a step
or two, and the model thread serves the next request; a search shared with a request that still waits
runs to its end. Over a real tiny model whose decoding steps are counted, and slowed on demand."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

LENGTH = 40  # every output has exactly LENGTH tokens: a search takes LENGTH + 1 steps
OPTIONS = {"beam_size": 2, "max_len_a": 0.0, "max_len_b": LENGTH, "min_len": LENGTH}
TEXTS = ["in the beginning god created heaven", "the night was good"]


class Steps:
    """Counts the decoding steps of each search of `translator`'s model (a new count at each
    init_state); while `slow` is set, each step takes `step_s` longer."""

    def __init__(self, translator: Translator, step_s: float) -> None:
        self.counts: list[int] = []
        self.slow, self.step_s = threading.Event(), step_s
        model = translator.model
        init_state, decode_step = model.init_state, model.decode_step

        def counted_init_state(*args: Any, **kwargs: Any) -> Any:
            self.counts.append(0)
            return init_state(*args, **kwargs)

        def slowed_decode_step(*args: Any, **kwargs: Any) -> Any:
            self.counts[-1] += 1
            if self.slow.is_set():
                time.sleep(self.step_s)
            return decode_step(*args, **kwargs)

        model.init_state, model.decode_step = counted_init_state, slowed_decode_step


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=128)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "model.pt", model, tokenizer, step=3)


def counted_batcher(checkpoint: Path, step_s: float, **settings: Any) -> tuple[BatchingTranslator, Steps]:
    steps: list[Steps] = []

    def load() -> Translator:
        translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
        steps.append(Steps(translator, step_s))
        return translator

    return BatchingTranslator(load, **settings), steps[0]


def test_a_search_whose_only_request_timed_out_stops_and_the_next_request_is_served(checkpoint):
    batcher, steps = counted_batcher(checkpoint, step_s=0.1)
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), request_timeout_s=1.0,
                     error_delay_ms=0)  # fmt: skip
    expected = [str(t) for t in Translator.from_checkpoint(checkpoint, options=OPTIONS).translate(TEXTS[1:])]
    with TestClient(app) as client:
        steps.slow.set()  # 4.1 s of search, 1 s allowed
        late = client.post("/translate", json={"texts": TEXTS[0]})
        assert late.status_code == 504, late.text
        at_answer = steps.counts[-1]
        time.sleep(0.5)  # 5 more steps, were the search still running
        assert steps.counts == [pytest.approx(at_answer, abs=2)] and steps.counts[0] <= LENGTH
        assert batcher.stats.stopped_searches == 1
        steps.slow.clear()
        answer = client.post("/translate", json={"texts": TEXTS[1]})
        assert answer.status_code == 200 and answer.json()["translations"] == expected
        assert steps.counts[1] == LENGTH + 1
        assert client.get("/stats").json()["stopped_searches"] == 1


def test_a_search_shared_with_a_request_that_still_waits_runs_to_its_end(checkpoint):
    batcher, steps = counted_batcher(checkpoint, step_s=0.02, batch_wait_ms=300, max_batch_wait_ms=600)
    own = batcher.translator

    async def one_leaves() -> Any:
        leaving = asyncio.create_task(batcher.translate(own.encode(TEXTS[:1])))
        staying = asyncio.create_task(batcher.translate(own.encode(TEXTS[1:])))
        while not steps.counts or steps.counts[-1] < 5:  # the shared search has started
            await asyncio.sleep(0.01)
        leaving.cancel()  # its client has gone, as after a 504
        return await staying

    steps.slow.set()
    try:
        answer = asyncio.run(asyncio.wait_for(one_leaves(), timeout=60))
    finally:
        batcher.close()
    steps.slow.clear()
    assert steps.counts == [LENGTH + 1] and batcher.stats.batches == 1
    assert batcher.stats.stopped_searches == 0
    assert [str(ranked[0]) for ranked in answer] == [str(t) for t in own.translate(TEXTS[1:])]

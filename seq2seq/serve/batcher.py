"""Dynamic batching: requests from many clients translated together by one model worker thread.

A batch stays open while requests with its search settings keep arriving: it closes when none has
come for `batch_wait_ms`, `max_batch_wait_ms` after its first request, or when its token budget is
full, so a burst of requests longer than one wait still shares a batch while a lone request waits
only `batch_wait_ms`. (With 32 clients on 2 cores of an AMD EPYC, AVX512-BF16, the default 5 ms gave
about 16 requests per batch and 40 ms about 29, at the same throughput.) The requests of a batch are
searched as one set of sentences (length-sorted into token-budget batches by the Translator), and
each request gets back exactly its own translations. The event loop only enqueues and awaits: encoding,
search and detokenization all run on the worker thread, so a slow model never blocks the server.

The worker thread also loads the model, and no other thread runs PyTorch: the OpenMP threads that
compute for PyTorch then belong to that one thread. When the main thread has computed too, its OpenMP
team stays alive beside the worker's; with more OpenMP threads than cores, libgomp stops spinning
between parallel regions, and each of a search's many small operations waits for sleeping threads to
wake. On 2 cores, single-sentence beam-5 searches on a worker thread ran at 3.8 sentences/s after the
main thread had loaded the model, and at 8.8 when the worker thread had loaded it (AMD EPYC,
AVX512-BF16, torch 2.13.0+cpu; 7.4 on the main thread alone).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seq2seq.decode.options import SearchOptions
from seq2seq.decode.translator import Translator

log = logging.getLogger(__name__)
_STOP = object()  # put in the queue by close(): finish what is queued, then end the worker


@dataclass
class _Job:
    texts: list[str]
    options: SearchOptions
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    characters: int = field(init=False)

    def __post_init__(self) -> None:
        self.characters = sum(len(text) for text in self.texts)


class BatchStats:
    """Counters the server reports (GET /stats): how much batching happened."""

    def __init__(self) -> None:
        self.batches = self.requests = self.sentences = 0
        self.largest_batch_requests = self.largest_batch_sentences = 0

    def record(self, jobs: list[_Job]) -> None:
        sentences = sum(len(job.texts) for job in jobs)
        self.batches, self.requests, self.sentences = (
            self.batches + 1,
            self.requests + len(jobs),
            self.sentences + sentences,
        )
        self.largest_batch_requests = max(self.largest_batch_requests, len(jobs))
        self.largest_batch_sentences = max(self.largest_batch_sentences, sentences)


class BatchingTranslator:
    """Async front of a Translator: `await translate(texts, options)` from any number of requests.

    `load` builds the Translator; it runs on the worker thread (see the module docstring), and the
    constructor returns once it has, or raises what it raised.
    """

    def __init__(
        self,
        load: Callable[[], Translator],
        *,
        batch_wait_ms: float = 5.0,
        max_batch_wait_ms: float = 50.0,
        max_batch_tokens: int = 4096,
    ) -> None:
        self.max_batch_tokens = max_batch_tokens
        self.batch_wait = batch_wait_ms / 1000.0
        self.max_batch_wait = max(max_batch_wait_ms, batch_wait_ms) / 1000.0
        self.stats = BatchStats()
        self._jobs: queue.Queue[object] = queue.Queue()
        self._closing = False
        self._loaded: queue.Queue[Translator | BaseException] = queue.Queue(maxsize=1)
        self._worker = threading.Thread(target=self._run, args=(load,), name="translation", daemon=True)
        self._worker.start()
        loaded = self._loaded.get()
        if isinstance(loaded, BaseException):
            self._worker.join()
            raise loaded
        self.translator: Translator = loaded

    async def translate(self, texts: list[str], options: SearchOptions) -> list[list[tuple[str, float]]]:
        """Per text, its n-best (translation, score) pairs."""
        loop = asyncio.get_running_loop()
        job = _Job(texts, options, loop, loop.create_future())
        self._jobs.put(job)
        return await job.future

    def close(self) -> None:
        """Finish every queued request, then stop the worker."""
        self._jobs.put(_STOP)
        self._worker.join()

    # ------------------------------------------------------------------ the worker thread
    def _run(self, load: Callable[[], Translator]) -> None:
        try:
            self._loaded.put(load())
        except BaseException as error:  # handed to the constructor, which raises it in its own thread
            self._loaded.put(error)
            return
        pending: deque[_Job] = deque()  # taken from the queue with other settings than their batch's
        while True:
            first = pending.popleft() if pending else self._take(timeout=None)
            if first is None:  # closing, and nothing is left
                return
            self._translate(self._gather(first, pending))

    def _take(self, timeout: float | None) -> _Job | None:
        """The next job; None when `timeout` passes, or when closing and the queue is empty."""
        try:
            item = self._jobs.get_nowait() if self._closing else self._jobs.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is _STOP:
            self._closing = True
            return self._take(timeout)
        return item

    def _gather(self, first: _Job, pending: deque[_Job]) -> list[_Job]:
        """`first` and the jobs with its settings that arrive while the batch is open, up to the token
        budget (counted as characters / 4); the others wait in `pending` for a later batch."""
        batch, budget = [first], self.max_batch_tokens * 4 - first.characters
        for job in [job for job in pending if job.options == first.options]:
            if job.characters <= budget:
                pending.remove(job)
                batch.append(job)
                budget -= job.characters
        now = time.monotonic()
        quiet_until, closes = now + self.batch_wait, now + self.max_batch_wait
        while budget > 0 and (remaining := min(quiet_until, closes) - time.monotonic()) > 0:
            job = self._take(timeout=remaining)
            if job is None:
                break
            if job.options == first.options and job.characters <= budget:
                batch.append(job)
                budget -= job.characters
                quiet_until = time.monotonic() + self.batch_wait
            else:
                pending.append(job)
        return batch

    def _translate(self, jobs: list[_Job]) -> None:
        texts = [text for job in jobs for text in job.texts]
        try:
            encoded = self.translator.encode(texts)
            results = self.translator.search(
                encoded.sources, jobs[0].options, max_tokens=self.max_batch_tokens
            )
            joined = self.translator.join_pieces(encoded, results)
        except Exception as error:
            log.exception("translation failed")
            for job in jobs:
                job.loop.call_soon_threadsafe(_fail, job.future, error)
            return
        self.stats.record(jobs)
        start = 0
        for job in jobs:
            answer = joined[start : start + len(job.texts)]
            start += len(job.texts)
            job.loop.call_soon_threadsafe(_resolve, job.future, answer)


def _resolve(future: asyncio.Future, value: Any) -> None:
    if not future.done():  # the client may have gone; its answer is dropped
        future.set_result(value)


def _fail(future: asyncio.Future, error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

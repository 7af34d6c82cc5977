"""Dynamic batching: requests from many clients translated together by one model worker thread.

A batch stays open while requests with its search settings keep arriving: it closes when none has
come for `batch_wait_ms`, `max_batch_wait_ms` after its first request, or when its token budget is
full, so a burst of requests longer than one wait still shares a batch while a lone request waits
only `batch_wait_ms`. (A longer wait makes larger batches, but it did not raise throughput with 32
clients: benchmarks/results.md.) The requests of a batch are
searched as one set of sentences (length-sorted into token-budget batches by the Translator), and
each request gets back exactly its own translations. Requests for different languages of a multilingual
model share batches too: each brings its sources with its source language code and its own forced target
prefix (its target language code) per sentence, which the search applies row by row.

Requests arrive here already checked and prepared (requests.py: the pipeline's first step,
seq2seq.inference.pipeline), so a bad one never joins a batch; a batch's prepared requests are merged
and run through the pipeline's search and finish, the same steps as every other surface. If a
batch still fails, its requests are searched again one by one, so only the culprit gets an error: a
4xx naming its sentence when the failure is the request's (UserError, UnicodeError), a 500 otherwise.
At most `max_queue` requests wait for the model; beyond that a request is refused (503) at once. A
request whose client has gone (disconnected, timed out) is dropped if its search has not started; a
search every request of which has gone stops at its next decoding step (Translator.search's `stop`),
so a request that would hold the model thread for long holds it hardly longer than its timeout.

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
import dataclasses
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.api import Prepared, SearchStopped, Translation, Translator, merge, text_of
from seq2seq.serve.requests import HTTPError

log = logging.getLogger("seq2seq.serve")
_STOP = object()  # put in the queue by close(): finish what is queued, then end the worker
# Per text, its n-best Translations, best first: with their confidence and constraint outcome when the
# request asked for them, else text and score only (what other requests of its batch ask changes nothing).
Answer = list[list[Translation]]


@dataclass(eq=False)
class _Job:
    prepared: Prepared  # its texts' pieces, prefixes, phrases, search options, avoided phrases, confidence
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    # -> "started" (taken into a search) or "dropped" (its client has gone); "started" -> "abandoned"
    # (its client has gone during its search: a search whose every job is abandoned stops)
    state: str = "queued"

    @property
    def tokens(self) -> int:
        return self.prepared.tokens

    @property
    def n_texts(self) -> int:
        return self.prepared.n_texts


class BatchStats:
    """Counters the server reports (GET /stats): how much batching happened, and what went wrong."""

    def __init__(self) -> None:
        self.batches = self.requests = self.sentences = 0
        self.largest_batch_requests = self.largest_batch_sentences = 0
        self.dropped = self.retried_batches = self.failed_requests = 0
        self.stopped_searches = 0  # searches stopped because every request in them had gone

    def record(self, jobs: list[_Job]) -> None:
        sentences = sum(job.n_texts for job in jobs)
        self.batches, self.requests, self.sentences = (
            self.batches + 1,
            self.requests + len(jobs),
            self.sentences + sentences,
        )
        self.largest_batch_requests = max(self.largest_batch_requests, len(jobs))
        self.largest_batch_sentences = max(self.largest_batch_sentences, sentences)


class BatchingTranslator:
    """Async front of a Translator: `await translate(prepared)` from any number of requests.

    `load` builds the Translator; it runs on the worker thread (see the module docstring), and the
    constructor returns once it has, or raises what it raised. `on_batch(requests, sentences)` is
    called on the worker thread after each search (metrics).
    """

    def __init__(
        self,
        load: Callable[[], Translator],
        *,
        batch_wait_ms: float = 5.0,
        max_batch_wait_ms: float = 50.0,
        max_tokens: int = 4096,
        max_queue: int = 256,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> None:
        self.max_tokens, self.max_queue, self.on_batch = max_tokens, max_queue, on_batch
        self.batch_wait = batch_wait_ms / 1000.0
        self.max_batch_wait = max(max_batch_wait_ms, batch_wait_ms) / 1000.0
        self.stats = BatchStats()
        self.translator: Translator
        self._jobs: queue.Queue[object] = queue.Queue()
        self._lock = threading.Lock()  # guards job states, _waiting and _stopped across the two threads
        self._waiting = 0  # admitted, neither started nor dropped
        self._stopped = self._refusing = self._closing = False
        self._pending: deque[_Job] = deque()  # taken from the queue with other settings than their batch's
        self._current: list[_Job] = []
        self._loaded: queue.Queue[BaseException | None] = queue.Queue(maxsize=1)
        self._worker = threading.Thread(target=self._run, args=(load,), name="translation", daemon=True)
        self._worker.start()
        failure = self._loaded.get()
        if failure is not None:
            self._worker.join()
            raise failure

    @property
    def healthy(self) -> bool:
        """False once the model thread has stopped: nothing would answer a request."""
        return self._worker.is_alive() and not self._stopped

    @property
    def waiting(self) -> int:
        """Requests admitted and not yet searched (the queue depth max_queue bounds)."""
        return self._waiting

    async def translate(self, prepared: Prepared) -> Answer:
        """Per text, its n-best Translations (seq2seq.inference.confidence): text and score; with
        confidence their confidence too, with constraints how many phrases each met. Requests with and
        without them, and for any languages, share batches: what one asks for changes no other's answer
        (avoided phrases apply to a whole search, so only requests avoiding the same phrases share one).
        Cancelling the call drops the request's work unless its search has started, and stops its search
        if no other request waits for it; HTTPError 503 when the queue is full or the model thread gone."""
        loop = asyncio.get_running_loop()
        job = _Job(prepared, loop, loop.create_future())
        self._admit(job)
        try:
            return await job.future
        except asyncio.CancelledError:
            self._drop(job)
            raise

    def close(self) -> None:
        """Finish every queued request, then stop the worker."""
        self._refusing = True
        self._jobs.put(_STOP)
        self._worker.join()

    def _admit(self, job: _Job) -> None:
        with self._lock:
            if self._stopped or self._refusing:
                raise HTTPError(503, "the model thread has stopped; the server cannot translate")
            if self._waiting >= self.max_queue:
                raise HTTPError(
                    503,
                    f"the server is busy: {self._waiting} requests are waiting (max_queue={self.max_queue}); "
                    "retry later",
                    {"Retry-After": "1"},
                )
            self._waiting += 1
            self._jobs.put(job)

    def _drop(self, job: _Job) -> None:
        with self._lock:
            if job.state == "queued":
                job.state, self._waiting = "dropped", self._waiting - 1
                self.stats.dropped += 1
            elif job.state == "started":
                job.state = "abandoned"

    def _start(self, jobs: list[_Job]) -> list[_Job]:
        """The jobs of a batch whose clients are still waiting, now marked started."""
        with self._lock:
            live = [job for job in jobs if job.state == "queued"]
            for job in live:
                job.state = "started"
            self._waiting -= len(live)
        return live

    # ------------------------------------------------------------------ the worker thread
    def _run(self, load: Callable[[], Translator]) -> None:
        try:
            self.translator = load()
        except BaseException as error:  # handed to the constructor, which raises it in its own thread
            self._loaded.put(error)
            return
        self._loaded.put(None)
        try:
            while True:
                first = self._pending.popleft() if self._pending else self._take(timeout=None)
                if first is None:  # closing, and nothing is left
                    return
                self._current = self._gather(first)
                self._translate(self._current)
                self._current = []
        except BaseException:
            log.critical("the model thread stopped; /health now answers 503", exc_info=True)
        finally:
            self._stop_serving()

    def _stop_serving(self) -> None:
        """Answer every request still waiting (503) so that none hangs once no thread would search."""
        with self._lock:
            self._stopped = True
            left = [*self._current, *self._pending]
            while not self._jobs.empty():
                item = self._jobs.get_nowait()
                if isinstance(item, _Job):
                    left.append(item)
        failure = HTTPError(503, "the model thread has stopped; the server cannot translate")
        for job in left:
            _settle(job, _fail, failure)

    def _take(self, timeout: float | None) -> _Job | None:
        """The next job not dropped; None when `timeout` passes, or when closing and the queue is empty."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            try:
                if self._closing:
                    item = self._jobs.get_nowait()
                elif remaining is not None and remaining <= 0:
                    return None
                else:
                    item = self._jobs.get(timeout=remaining)
            except queue.Empty:
                return None
            if item is _STOP:
                self._closing = True
            elif isinstance(item, _Job) and item.state != "dropped":
                return item

    def _gather(self, first: _Job) -> list[_Job]:
        """`first` and the jobs with its settings that arrive while the batch is open, up to the token
        budget; the others wait in `_pending` for a later batch."""
        batch, budget = [first], self.max_tokens - first.tokens
        for job in [job for job in self._pending if _same_search(job, first)]:
            if job.tokens <= budget:
                self._pending.remove(job)
                batch.append(job)
                budget -= job.tokens
        now = time.monotonic()
        quiet_until, closes = now + self.batch_wait, now + self.max_batch_wait
        while budget > 0 and (remaining := min(quiet_until, closes) - time.monotonic()) > 0:
            job = self._take(timeout=remaining)
            if job is None:
                break
            if _same_search(job, first) and job.tokens <= budget:
                batch.append(job)
                budget -= job.tokens
                quiet_until = time.monotonic() + self.batch_wait
            else:
                self._pending.append(job)
        return batch

    def _translate(self, jobs: list[_Job]) -> None:
        """One search for the batch; if it fails, one per request, so only the culprit gets an error."""
        jobs = self._start(jobs)
        if not jobs:
            return
        try:
            answers = self._search(jobs)
        except SearchStopped:
            self._search_stopped(jobs)
            return
        except Exception as error:
            if len(jobs) == 1:
                self._fail_alone(jobs[0], error)
                return
            log.warning("a batch of %d requests failed (%r); translating them one by one", len(jobs), error)
            self.stats.retried_batches += 1
            for job in jobs:
                try:
                    self._deliver([job], self._search([job]))
                except SearchStopped:
                    self._search_stopped([job])
                except Exception as alone:
                    self._fail_alone(job, alone)
            return
        self._deliver(jobs, answers)

    def _search_stopped(self, jobs: list[_Job]) -> None:
        """A search nobody waited for any more has stopped: nothing to answer (each client had its 504,
        or has gone)."""
        self.stats.stopped_searches += 1
        log.info("stopped a search of %d request(s): each timed out or its client left", len(jobs))

    def _search(self, jobs: list[_Job], *, waiting: list[_Job] | None = None) -> list[Answer]:
        """Each job's answer, from one search over all their texts (the pipeline's search and finish on
        their merged prepared requests); SearchStopped once the client of every job `waiting` for it
        (default: `jobs`) has gone (asked at every decoding step)."""
        waiting = jobs if waiting is None else waiting
        merged = merge([job.prepared for job in jobs])
        results = self.translator.search(
            merged, max_tokens=self.max_tokens,
            stop=lambda: all(job.state == "abandoned" for job in waiting),  # read without the lock
        )  # fmt: skip
        ranked = self.translator.translations(merged, results)
        answers, start = [], 0
        for job in jobs:
            end = start + job.n_texts
            asked = job.prepared.confidence or job.prepared.constraints is not None
            answers.append(ranked[start:end] if asked else [[Translation(t.text, t.score) for t in nbest]
                                                            for nbest in ranked[start:end]])  # fmt: skip
            start = end
        return answers

    def _deliver(self, jobs: list[_Job], answers: list[Answer]) -> None:
        self.stats.record(jobs)
        if self.on_batch is not None:
            self.on_batch(len(jobs), sum(job.n_texts for job in jobs))
        for job, answer in zip(jobs, answers):
            _settle(job, _resolve, answer)

    def _fail_alone(self, job: _Job, error: Exception) -> None:
        """The answer of a request that fails on its own: 422 naming its sentence when the failure is
        the request's, else 500 (logged with its traceback)."""
        self.stats.failed_requests += 1
        if isinstance(error, (UserError, UnicodeError)):
            index = self._culprit(job)
            log.warning("a request failed on its own (sentence %s): %s", index, error)
            where = "" if index is None else f"sentence {index}: "
            _settle(job, _fail, HTTPError(422, f"{where}{error}"))
            return
        log.error("a request failed on its own", exc_info=error)
        message = f"the translation failed ({error.__class__.__name__}); the server log has the details"
        _settle(job, _fail, HTTPError(500, message))

    def _culprit(self, job: _Job) -> int | None:
        """The first sentence of the job whose search fails alone, searched as in the job (its
        constraints, the job's avoided phrases and confidence)."""
        if job.n_texts == 1:
            return 0
        for index in range(job.n_texts):
            try:
                self._search([dataclasses.replace(job, prepared=text_of(job.prepared, index))], waiting=[job])
            except SearchStopped:  # the client has gone: nobody reads the answer
                return None
            except Exception:
                return index
        return None


def _same_search(job: _Job, first: _Job) -> bool:
    return job.prepared.options == first.prepared.options and job.prepared.avoid == first.prepared.avoid


def _settle(job: _Job, settle: Callable[[asyncio.Future, Any], None], value: Any) -> None:
    try:
        job.loop.call_soon_threadsafe(settle, job.future, value)
    except RuntimeError:  # the event loop has closed (the server is exiting): nobody waits any more
        pass


def _resolve(future: asyncio.Future, value: Any) -> None:
    if not future.done():  # the client may have gone; its answer is dropped
        future.set_result(value)


def _fail(future: asyncio.Future, error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

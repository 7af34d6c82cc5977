"""GET /metrics in Prometheus' text format (prometheus-client, the `serve` extra).

The collectors live in a registry of the application's own, not the library's global one, so that two
applications in one process (tests) count separately. The process collector adds the server's
memory and CPU (process_resident_memory_bytes, ...) on Linux.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Metrics:
    """What the server counts: answers by status, latency, sentences, batch sizes, queue depth."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.requests = Counter(
            "seq2seq_requests", "POST /translate answers, by HTTP status (499: the client left first)",
            ["status"], registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "seq2seq_request_seconds", "Time from a POST /translate arriving to its answer, any status",
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.sentences = Counter("seq2seq_sentences", "Sentences translated", registry=self.registry)
        self.batch_requests = Histogram(
            "seq2seq_batch_requests", "Requests per model search", buckets=SIZE_BUCKETS,
            registry=self.registry,
        )  # fmt: skip
        self.batch_sentences = Histogram(
            "seq2seq_batch_sentences", "Sentences per model search", buckets=SIZE_BUCKETS,
            registry=self.registry,
        )  # fmt: skip
        self.queue_depth = Gauge(
            "seq2seq_queue_depth", "Requests waiting for the model (max_queue bounds it)",
            registry=self.registry,
        )  # fmt: skip
        self.model_up = Gauge(
            "seq2seq_model_thread_up", "1 while the model thread runs, 0 once it has stopped",
            registry=self.registry,
        )  # fmt: skip

    def watch(self, queue_depth: Callable[[], float], model_up: Callable[[], bool]) -> None:
        """Read the queue depth and the model thread's state whenever /metrics is scraped."""
        self.queue_depth.set_function(queue_depth)
        self.model_up.set_function(lambda: float(model_up()))

    def observe_request(self, status: int, seconds: float) -> None:
        self.requests.labels(status=str(status)).inc()
        self.latency.observe(seconds)

    def observe_batch(self, requests: int, sentences: int) -> None:
        """Called on the model thread after each search (the collectors are thread-safe)."""
        self.batch_requests.observe(requests)
        self.batch_sentences.observe(sentences)
        self.sentences.inc(sentences)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

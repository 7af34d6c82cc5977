"""A corpus translation's progress over input lines: a tqdm bar (sentences/s, ETA), or without one a log
line per chunk with the same."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

from tqdm import tqdm


class Progress:
    """A tqdm bar over input lines (sentences/s, ETA); without one, a log line per chunk with the same."""

    def __init__(
        self, log: logging.Logger, label: str, total: int, done: int, chunks: int, *, bar: bool
    ) -> None:  # fmt: skip
        self.log, self.total, self.done, self.start_done, self.chunks = log, total, done, done, chunks
        self.start, self.shown = time.perf_counter(), 0
        self.bar = None
        if bar:
            self.bar = tqdm(total=total, initial=done, unit="sent", desc=label, file=sys.stderr)

    def on_batch(self, lines: int, sentences: int) -> Callable[[int], None] | None:
        """A chunk's per-batch callback: moves the bar in proportion, within the chunk's lines."""
        self.shown = 0
        if self.bar is None:
            return None

        def moved(count: int) -> None:
            step = min(self.shown + round(count * lines / max(sentences, 1)), lines) - self.shown
            self.bar.update(step)  # type: ignore[union-attr]
            self.shown += step

        return moved

    def chunk_done(self, index: int, lines: int) -> None:
        self.done += lines
        if self.bar is not None:
            self.bar.update(lines - self.shown)
            return
        seconds = time.perf_counter() - self.start
        rate = (self.done - self.start_done) / max(seconds, 1e-9)
        eta = tqdm.format_interval((self.total - self.done) / max(rate, 1e-9))
        self.log.info("chunk %d/%d done: %d/%d lines, %.1f sentences/s, ETA %s",
                      index + 1, self.chunks, self.done, self.total, rate, eta)  # fmt: skip

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = ["Progress"]

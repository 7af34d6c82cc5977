"""Helpers for the server tests: a seq2seq-serve process on a free loopback port whose output is read as it
runs (a full pipe would stall a server that logs every request), and its /metrics."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

SERVE = [sys.executable, "-m", "seq2seq.cli.serve"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """Every sample of GET /metrics, by (name, sorted labels)."""
    response = httpx.get(f"{url}/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


class Server:
    """seq2seq-serve on `checkpoint` (a tiny model: short searches) with `overrides`; `command` replaces
    `python -m seq2seq.cli.serve` (a wrapper that watches the process), `env` adds variables."""

    def __init__(
        self, checkpoint: Path, *overrides: str, env: dict[str, str] | None = None,
        command: list[str] | None = None,
    ) -> None:  # fmt: skip
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        base = [f"checkpoint={checkpoint}", f"port={self.port}", "num_threads=1", "decode.max_len_a=0",
                "decode.max_len_b=12"]  # fmt: skip
        keys = {override.split("=")[0] for override in overrides}
        arguments = [*(a for a in base if a.split("=")[0] not in keys), *overrides]  # overrides win
        self.process = subprocess.Popen(
            [*(command or SERVE), *arguments], env={**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the server did not start:\n{self.output()}")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=60)

    def output(self) -> str:
        """What the server has printed so far (all of it once it has exited)."""
        if self.process.poll() is not None:
            self._reader.join(timeout=5)
        return "".join(self.lines)

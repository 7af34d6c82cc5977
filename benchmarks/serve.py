#!/usr/bin/env python
"""Serving over HTTP: throughput and latency of seq2seq-serve with 1, 8 and 32 concurrent clients,
against the same sentences translated offline in one call (the upper bound a server can reach).

    python benchmarks/serve.py                               # runs/quickstart/best.pt, 400 test sentences
    python benchmarks/serve.py --checkpoint CKPT --sentences 200 --clients 1 8 32

The server runs in its own process with --threads threads (batch_wait_ms and max_batch_tokens at their
defaults); each client sends one Bible test sentence per request (beam 5) and waits for the answer
before sending the next; clients share one asyncio event loop in this process. The offline figure is
Translator.translate on all the sentences at once in a separate process with the same threads.
Both sides share the machine's cores with the clients, as a server on a small machine would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from common import describe_machine, format_table, load_average, print_headline

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def offline(checkpoint: Path, lines: list[str], threads: int) -> float:
    """Sentences/s of one Translator.translate call over every line, in a fresh process."""
    code = (
        "import json, sys, time, torch\nfrom seq2seq import Translator\n"
        f"torch.set_num_threads({threads})\nlines = json.load(sys.stdin)\n"
        f"t = Translator.from_checkpoint({str(checkpoint)!r})\nt.translate(lines[:8])\n"
        "start = time.perf_counter(); t.translate(lines); print(len(lines) / (time.perf_counter() - start))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], input=json.dumps(lines), capture_output=True,
                            text=True, env=env, check=True)  # fmt: skip
    return float(result.stdout.strip().splitlines()[-1])


async def load(url: str, lines: list[str], clients: int) -> tuple[float, list[float]]:
    """Sentences/s and per-request latencies (s) of `clients` clients sending one line per request."""
    import httpx

    todo = iter(lines)
    latencies: list[float] = []

    async def client(http: httpx.AsyncClient) -> None:
        for line in todo:
            start = time.perf_counter()
            response = await http.post(f"{url}/translate", json={"text": line})
            response.raise_for_status()
            latencies.append(time.perf_counter() - start)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        seconds = time.perf_counter() - start
    return len(lines) / seconds, latencies


def start_server(checkpoint: Path, threads: int, overrides: list[str]) -> tuple[subprocess.Popen, str]:
    import httpx

    port = free_port()
    command = [sys.executable, "-m", "seq2seq.cli.serve", f"checkpoint={checkpoint}", f"port={port}",
               f"threads={threads}", "log_level=warning", *overrides]  # fmt: skip
    server = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return server, url
        except httpx.TransportError:
            time.sleep(0.2)
    server.terminate()
    sys.exit("the server did not start")


def server_stats(url: str) -> dict[str, int]:
    import httpx

    return httpx.get(f"{url}/stats").json()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=ROOT / "runs" / "quickstart" / "best.pt")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bible_en_es")
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--server", nargs="*", default=[], help="seq2seq-serve overrides: batch_wait_ms=10")
    args = parser.parse_args()
    if not args.checkpoint.is_file():
        sys.exit(f"{args.checkpoint} does not exist; run scripts/quickstart.sh first or pass --checkpoint")
    lines = (args.data_dir / "test.en").read_text(encoding="utf-8").splitlines()[: args.sentences]
    print(describe_machine(args.threads))
    upper = offline(args.checkpoint, lines, args.threads)
    server, url = start_server(args.checkpoint, args.threads, args.server)
    rows, measured = [["offline, one call", f"{upper:.1f}", "", "", "1.00", ""]], {}
    try:
        for clients in args.clients:
            before = server_stats(url)
            speed, latencies = asyncio.run(load(url, lines, clients))
            batches = server_stats(url)["batches"] - before["batches"]
            measured[clients] = (speed, percentile(latencies, 0.95))
            rows.append([f"{clients} client(s)", f"{speed:.1f}", f"{percentile(latencies, 0.5):.2f}",
                         f"{percentile(latencies, 0.95):.2f}", f"{speed / upper:.2f}",
                         f"{len(lines) / batches:.1f}"])  # fmt: skip
        stats = server_stats(url)
    finally:
        server.terminate()
        server.wait()
    print(f"\n{len(lines)} Bible test sentences, beam 5, server and offline on {args.threads} threads\n")
    print(format_table(["", "sentences/s", "p50 s", "p95 s", "of offline", "requests per batch"], rows))
    print(f"server batching: {stats['requests']} requests in {stats['batches']} batches "
          f"(largest: {stats['largest_batch_requests']} requests)")  # fmt: skip
    most = max(args.clients)
    speed, p95 = measured[most]
    print_headline(
        f"serving sentences/s, {most} clients", "offline batch", f"{speed / upper:.2f}x", ">= 0.6x"
    )
    print_headline(f"p95 latency, {most} clients", "-", f"{p95:.2f} s", "<= 2 s")
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Serving over HTTP: throughput and latency of seq2seq-serve with 1, 8 and 32 concurrent clients,
against the same sentences translated offline in one call (the upper bound a server can reach); or, with
--hostile, whether one client sending bad requests costs 32 well-behaved clients anything.

    python benchmarks/serve.py                               # runs/quickstart/best.pt, 400 test sentences
    python benchmarks/serve.py --checkpoint CKPT --sentences 200 --clients 1 8 32
    python benchmarks/serve.py --hostile --duration 60       # 60 s without the bad client, 60 s with it
    python benchmarks/serve.py --encoding                    # checking and encoding the largest request
    python benchmarks/serve.py --models CKPT2 CKPT3          # memory: one server with 1, 2, 3 models

The server runs in its own process with --threads threads (batch_wait_ms and max_tokens at their
defaults); each client sends one Bible test sentence per request (beam 5) and waits for the answer
before sending the next; clients share one asyncio event loop in this process. The offline figure is
Translator.translate on all the sentences at once in a separate process with the same threads.
Both sides share the machine's cores with the clients, as a server on a small machine would.

--hostile starts one server (long_lines=error), warms it up with good load for --warmup seconds (the
model's RSS grows under load of varied batch shapes until its caches are full, about 30 s on a tiny
model, with or without HTTP), then runs the 32 good clients (one test sentence per request, beam 5) for
--duration seconds alone and again for --duration seconds beside one bad client in a process of its
own. The bad client sends, one after another as fast as it is answered, a sentence over the model's
token limit (under max_chars), a lone surrogate, 200 kB of nested JSON, wrong types, invalid JSON, a
wrong Content-Type, bodies over max_body_bytes (declared, and streamed without a length), constraint
and avoid abuse (a 3,000-word phrase, more phrases than max_phrases, a lone surrogate in a phrase, an
empty phrase, phrases that cannot be met: required and avoided, or more than the beam holds), and it
disconnects mid-body and before its answer. Printed: good requests answered 200 (must be 100%), bad
ones answered 4xx (must be 100%; the disconnects cannot be answered and are listed apart), 5xx answers
seen by anyone or counted by the server (must be 0), the good clients' throughput with the bad client
as a ratio of without (target >= 0.90), and the server's RSS after the hostile phase against after the
equally long good-only phase (target within 10%).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from common import describe_machine, format_table, load_average, mib, print_headline

ROOT = Path(__file__).resolve().parents[1]
MAX_PHRASES = 16  # seq2seq-serve's default max_phrases (configs/serve.yaml)


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
            response = await http.post(f"{url}/translate", json={"texts": line})
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
               f"num_threads={threads}", "log_level=warning", *overrides]  # fmt: skip
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


# ----------------------------------------------------------------------------- --models


def several_models(args: argparse.Namespace, lines: list[str]) -> None:
    """The server's RSS with --checkpoint alone, then with each of --models added (models=[...]), each
    model having translated --sentences lines first (through its own pair: the request names none, so
    with one-pair models of one pair the later ones are loaded and warmed up but idle)."""
    import httpx

    rows, previous = [], None
    for count in range(1, len(args.models) + 2):
        extra = [str(path) for path in args.models[: count - 1]]
        overrides = [*args.server, f"models=[{','.join(extra)}]"]
        server, url = start_server(args.checkpoint, args.threads, overrides)
        try:
            for start in range(0, len(lines), 16):
                httpx.post(f"{url}/translate", json={"texts": lines[start : start + 16]}, timeout=300)
            names = [model["name"] for model in httpx.get(f"{url}/health").json()["models"]]
            rss = server_rss(server)
        finally:
            server.terminate()
            server.wait()
        weights = sum(parameter_bytes(Path(path)) for path in [args.checkpoint, *extra])
        added = "" if previous is None else f"{(rss - previous) / 2**20:.0f}"
        rows.append([str(count), ", ".join(names), f"{weights / 2**20:.0f}", f"{rss / 2**20:.0f}", added])
        previous = rss
    print(format_table(["models", "names", "weights MiB", "server RSS MiB", "added MiB"], rows))


def parameter_bytes(path: Path) -> int:
    """The bytes of a checkpoint's model weights (fp32 as served), not its optimizer state."""
    import torch

    loaded = torch.load(path, map_location="cpu", weights_only=False)
    return sum(t.numel() * t.element_size() for t in loaded["model"].values() if torch.is_tensor(t))


# ----------------------------------------------------------------------------- --hostile


def server_rss(server: subprocess.Popen) -> int:
    """The server process's resident set in bytes (Linux)."""
    with open(f"/proc/{server.pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


async def good_clients(url: str, lines: list[str], clients: int, seconds: float) -> tuple[Counter, float]:
    """Statuses of `clients` clients sending one line per request until `seconds` have passed, and the
    seconds it took (the last requests finish after the deadline)."""
    import httpx

    statuses: Counter = Counter()
    todo, deadline = itertools.cycle(lines), time.monotonic() + seconds

    async def client(http: httpx.AsyncClient) -> None:
        while time.monotonic() < deadline:
            try:
                statuses[(await http.post(f"{url}/translate", json={"texts": next(todo)})).status_code] += 1
            except httpx.HTTPError as error:
                statuses[type(error).__name__] += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        return statuses, time.perf_counter() - start


def raw_request(url: str, body: bytes, *, send_bytes: int) -> str:
    """Send the first `send_bytes` of a JSON POST of `body` on a socket of its own, then disconnect."""
    host, port = url.removeprefix("http://").split(":")
    head = (f"POST /translate HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall((head + body)[: len(head) + send_bytes])
    return "disconnected"


def bad_kinds(max_chars: int, max_body_bytes: int) -> dict[str, Callable]:
    """Each kind of bad request: a function (http client, url) -> the status it got."""
    long_line = " ".join("abcdefghij" * (max_chars // 20))[: max_chars - 1]  # ~1 token per character pair
    oversize = b" " * (max_body_bytes + 1)
    wrong = itertools.cycle([{"texts": 5}, {"texts": ["a", 3]}, {"texts": "a", "beam_size": "5"},
                             {"texts": []}, {"texts": "a", "speed": 1}, ["text"]])  # fmt: skip
    json_type = {"Content-Type": "application/json"}
    text = "In the beginning God created the heaven and the earth."
    words = [f"palabra{number}" for number in range(MAX_PHRASES + 1)]
    too_long = " ".join(["Dios creó la luz"] * 750)  # 3,000 words: searched, it would hold the model long
    too_many = itertools.cycle([{"texts": text, "constraints": [words]}, {"texts": text, "avoid": words}])
    unmet = itertools.cycle([{"texts": text, "constraints": [["Dios"]], "avoid": ["Dios"]},
                             {"texts": text, "beam_size": 1, "constraints": [["Dios", "luz"]]}])  # fmt: skip
    surrogate = itertools.cycle([b'{"texts": "In the beginning", "constraints": [["Dios \\ud800"]]}',
                                 b'{"texts": "In the beginning", "avoid": ["\\udfff luz"]}'])  # fmt: skip

    def send(bodies: Iterator[dict]) -> Callable:
        return lambda http, url: http.post(f"{url}/translate", json=next(bodies)).status_code

    def post(body: bytes, headers: dict = json_type) -> Callable:
        return lambda http, url: http.post(f"{url}/translate", content=body, headers=headers).status_code

    def chunks():
        for _ in range(max_body_bytes // 65536 + 2):
            yield b" " * 65536

    return {
        "over the token limit": post(json.dumps({"texts": [long_line]}).encode()),
        "lone surrogate": post(b'{"texts": ["fine", "ok \\ud800"]}'),
        "200 kB of nesting": post(b"[" * 200_000),
        "wrong types": send(wrong),
        "a 3,000-word phrase": send(itertools.repeat({"texts": text, "constraints": [[too_long]]})),
        "more phrases than max_phrases": send(too_many),
        "lone surrogate in a phrase": lambda http, url: (
            http.post(f"{url}/translate", content=next(surrogate), headers=json_type).status_code
        ),
        "an empty phrase": send(itertools.repeat({"texts": text, "constraints": [["Dios", " "]]})),
        "phrases that cannot be met": send(unmet),
        "invalid JSON": post(b'{"texts": "unterminated'),
        "not JSON (a form)": post(b"text=hello", {"Content-Type": "application/x-www-form-urlencoded"}),
        "body over the limit": post(oversize),
        "streamed body over the limit": lambda http, url: (
            http.post(f"{url}/translate", content=chunks(), headers=json_type).status_code
        ),
        "disconnect mid-body": lambda http, url: raw_request(
            url, b'{"texts": "in the beginning"}', send_bytes=9
        ),
        "disconnect before the answer": lambda http, url: raw_request(
            url, b'{"texts": "in the beginning"}', send_bytes=10**6
        ),
    }


def bad_client(url: str, seconds: float, max_chars: int, max_body_bytes: int, start, results) -> None:
    """The hostile client (its own process): every kind of bad request in turn until `seconds` pass."""
    import httpx

    kinds = bad_kinds(max_chars, max_body_bytes)
    counts: dict[str, Counter] = {kind: Counter() for kind in kinds}
    start.wait()
    deadline = time.monotonic() + seconds
    with httpx.Client(timeout=60) as http:
        for kind, send in itertools.cycle(kinds.items()):
            if time.monotonic() >= deadline:
                break
            try:
                counts[kind][send(http, url)] += 1
            except httpx.HTTPError as error:
                counts[kind][type(error).__name__] += 1
    results.put({kind: dict(counter) for kind, counter in counts.items()})


def server_5xx(url: str) -> int:
    """5xx answers the server counted (its /metrics)."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    samples = [s for f in text_string_to_metric_families(httpx.get(f"{url}/metrics").text) for s in f.samples]
    return int(
        sum(s.value for s in samples if s.name == "seq2seq_requests_total" and s.labels["status"] >= "500")
    )


def hostile_run(url: str, server: subprocess.Popen, lines: list[str], args: argparse.Namespace) -> dict:
    """Good clients alone, then beside the bad client: statuses, throughputs and RSS of both phases."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    bad = context.Process(target=bad_client, args=(url, args.duration, 2000, 1 << 20, start, results))
    bad.start()  # imports while the good clients run alone; starts sending when `start` is set
    asyncio.run(good_clients(url, lines, args.good_clients, args.warmup))  # to the model's RSS plateau
    rss_startup = server_rss(server)
    alone, alone_seconds = asyncio.run(good_clients(url, lines, args.good_clients, args.duration))
    rss_before = server_rss(server)
    start.set()
    beside, beside_seconds = asyncio.run(good_clients(url, lines, args.good_clients, args.duration))
    bad_counts = results.get(timeout=args.duration + 300)
    bad.join()
    return {"alone": alone, "alone_s": alone_seconds, "beside": beside, "beside_s": beside_seconds,
            "bad": bad_counts, "rss": (rss_startup, rss_before, server_rss(server)),
            "server_5xx": server_5xx(url)}  # fmt: skip


def report_hostile(run: dict, clients: int, duration: float) -> None:
    alone_rate = run["alone"][200] / run["alone_s"]
    beside_rate = run["beside"][200] / run["beside_s"]
    good_total = sum(run["beside"].values())
    rows, bad_sent, bad_4xx, disconnects, client_5xx = [], 0, 0, 0, 0
    for kind, statuses in run["bad"].items():
        answered = {s: n for s, n in statuses.items() if s != "disconnected"}
        disconnects += statuses.get("disconnected", 0)
        bad_sent += sum(answered.values())
        bad_4xx += sum(n for s, n in answered.items() if isinstance(s, int) and 400 <= s < 500)
        client_5xx += sum(n for s, n in answered.items() if isinstance(s, int) and s >= 500)
        rows.append([kind, ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items(), key=str))])
    client_5xx += sum(n for s, n in (run["alone"] + run["beside"]).items() if isinstance(s, int) and s >= 500)
    print(f"\n{clients} good clients, {duration:g} s alone then {duration:g} s beside one bad client\n")
    print(format_table(["bad request", "answers (status: count)"], rows))
    rss_startup, rss_before, rss_after = run["rss"]
    print(
        f"\ngood clients alone: {dict(run['alone'])} in {run['alone_s']:.1f} s ({alone_rate:.1f} requests/s)"
    )
    print(f"good clients beside the bad one: {dict(run['beside'])} in {run['beside_s']:.1f} s "
          f"({beside_rate:.1f} requests/s)")  # fmt: skip
    print(f"bad client: {bad_sent} answerable requests, {disconnects} disconnects (no answer possible)")
    print(f"server RSS: {mib(rss_startup)} MiB after the warm-up, {mib(rss_before)} MiB after the good-only "
          f"phase, {mib(rss_after)} MiB after the hostile phase")  # fmt: skip
    print_headline(
        "good requests answered 200", "-", f"{run['beside'][200] / max(good_total, 1):.2%}", "100%"
    )
    print_headline("bad requests answered 4xx", "-", f"{bad_4xx / max(bad_sent, 1):.2%}", "100%")
    print_headline("5xx answers (clients / server count)", "-", f"{client_5xx} / {run['server_5xx']}", "0")
    print_headline("good throughput beside the bad client", "good clients alone",
                   f"{beside_rate / alone_rate:.2f}x", ">= 0.90x")  # fmt: skip
    print_headline("server RSS after the hostile phase", "after the good-only phase",
                   f"{rss_after / rss_before:.2f}x", "within 10%")  # fmt: skip


def hostile(args: argparse.Namespace, lines: list[str]) -> None:
    server, url = start_server(args.checkpoint, args.threads, ["long_lines=error", *args.server])
    try:
        run = hostile_run(url, server, lines, args)
    finally:
        server.terminate()
        server.wait()
    report_hostile(run, args.good_clients, args.duration)
    print(f"load average at the end: {load_average()}")


# ----------------------------------------------------------------------------- --encoding


def largest_request(
    data_dir: Path, translator: Any, limits: Any
) -> tuple[list[str], list[list[str]], list[str]]:
    """The largest request the limits allow: max_sentences texts of max_chars characters (the test set's
    English, repeated), max_phrases target phrases of up to max_phrase_chars characters per text and in
    "avoid" (Spanish test words the vocabulary spells without <unk>; no phrase is given twice)."""
    english = " ".join((data_dir / "test.en").read_text(encoding="utf-8").split())
    english *= limits.max_sentences * limits.max_chars // len(english) + 1
    texts = [english[i * limits.max_chars : (i + 1) * limits.max_chars] for i in range(limits.max_sentences)]
    words = iter((data_dir / "test.es").read_text(encoding="utf-8").split())
    phrases: list[str] = []
    while len(phrases) < (limits.max_sentences + 1) * limits.max_phrases:
        phrase = ""
        while len(phrase) < limits.max_phrase_chars - 20:
            phrase = f"{phrase} {next(words)}".strip()
        pieces = translator.tgt_tokenizer.encode(phrase)
        if (
            len(phrase) <= limits.max_phrase_chars
            and phrase not in phrases
            and translator.tgt_tokenizer.unk_id not in pieces
        ):
            phrases.append(phrase)
    per_text = [phrases[i * limits.max_phrases : (i + 1) * limits.max_phrases] for i in range(len(texts))]
    return texts, per_text, phrases[len(texts) * limits.max_phrases :]


def encoding(args: argparse.Namespace) -> None:
    """Milliseconds the event loop spends checking and encoding the largest request the default limits
    allow, without and with its phrases (median of --repeats)."""
    from seq2seq import Translator
    from seq2seq.serve.requests import Limits, encode_request, encode_terms, parse_request

    limits, translator = Limits(), Translator.from_checkpoint(args.checkpoint)
    texts, constraints, avoid = largest_request(args.data_dir, translator, limits)
    plain = {"texts": texts, "beam_size": limits.max_beam_size}
    rows = []
    for name, request in (("texts only", plain), ("with phrases", {**plain, "constraints": constraints,
                                                                   "avoid": avoid})):  # fmt: skip
        body, times = json.dumps(request).encode(), []
        for _ in range(args.repeats):
            start = time.perf_counter()
            parsed = parse_request(body, limits, translator.options)
            encode_terms(translator, parsed, encode_request(translator, parsed.texts))
            times.append((time.perf_counter() - start) * 1000)
        rows.append([name, f"{len(body):,}", f"{percentile(times, 0.5):.1f}", f"{max(times):.1f}"])
    print(f"\n{limits.max_sentences} texts of {limits.max_chars} characters; {limits.max_phrases} "
          f"phrases of <= {limits.max_phrase_chars} characters per text and in avoid; "
          f"{args.repeats} runs\n")  # fmt: skip
    print(format_table(["request", "body bytes", "median ms", "max ms"], rows))
    print(f"load average at the end: {load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=ROOT / "runs" / "quickstart" / "best.pt")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bible_en_es")
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--server", nargs="*", default=[], help="seq2seq-serve overrides: batch_wait_ms=10")
    parser.add_argument("--hostile", action="store_true", help="good clients alone, then beside a bad one")
    parser.add_argument("--duration", type=float, default=60.0, help="--hostile: seconds of each phase")
    parser.add_argument("--good-clients", type=int, default=32, help="--hostile: well-behaved clients")
    parser.add_argument("--warmup", type=float, default=30.0, help="--hostile: seconds of good load first")
    parser.add_argument("--encoding", action="store_true", help="time checking and encoding one request")
    parser.add_argument("--models", type=Path, nargs="+", default=[],
                        help="memory of a server of --checkpoint, then with each of these added")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=20, help="--encoding: runs to take the median of")
    args = parser.parse_args()
    if not args.checkpoint.is_file():
        sys.exit(f"{args.checkpoint} does not exist; run scripts/quickstart.sh first or pass --checkpoint")
    if args.encoding:
        print(describe_machine(args.threads))
        encoding(args)
        return
    lines = (args.data_dir / "test.en").read_text(encoding="utf-8").splitlines()[: args.sentences]
    print(describe_machine(args.threads))
    if args.hostile:
        hostile(args, lines)
        return
    if args.models:
        several_models(args, lines)
        return
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

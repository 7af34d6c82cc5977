#!/usr/bin/env python
"""The LibreTranslate API: seq2seq-serve's /libretranslate/translate against its own /translate on the same
model and the same client load, and, with --libretranslate-python, LibreTranslate itself on the same model
exported as an Argos Translate package.

    python benchmarks/libretranslate.py                                  # runs/align-layers/best.pt
    python benchmarks/libretranslate.py --clients 1 8 32 --rounds 5 --sentences 400
    python benchmarks/libretranslate.py --libretranslate-python ../ltvenv/bin/python
    python benchmarks/libretranslate.py --quick                          # a smoke run of seconds

One seq2seq-serve process (--threads threads, beam --beam-size) answers both of its routes. The load is
the Bible test verses that are one sentence each (as sentencex splits them), one verse per request,
from --clients concurrent clients on one asyncio loop, each waiting for its answer before sending the
next. Both routes get the same search: our API is asked for "segment": "sentences" and "markup": false,
which is what the LibreTranslate route does with `format: "text"`, and neither names a beam, so both
take the server's. The candidates run in rounds, the order rotated every round (A B, B A, A B, ...), so
load that comes and goes on the machine hits them alike; each round sends every verse once. Printed per
client count: sentences/s (median of the rounds), the spread of the rounds ((max - min) / median),
p50/p95 latency over every request of every round, and the ratio to our own /translate (the median of
the rounds' ratios, each round against the same round of /translate). The warm-up answers of each
candidate are compared with /translate's: the same translations mean the same search.

--libretranslate-python names the Python of a separate virtual environment holding LibreTranslate
(`pip install torch==2.13.0 libretranslate`; it pins numpy, packaging and requests versions this project
does not use). The checkpoint is exported with `seq2seq-export target=argos` (--export adds overrides;
--argos-package names an .argosmodel instead), unpacked into a temporary ARGOS_PACKAGES_DIR (as
argostranslate.package.install_from_path does), and LibreTranslate is started offline on it:

    python -m libretranslate.main --load-only en,es --disable-web-ui --disable-files-translation

never with --update-models, and with every argostranslate folder in a temporary one (XDG_DATA_HOME,
XDG_CONFIG_HOME, XDG_CACHE_HOME), the same beam as seq2seq-serve (ARGOS_BEAM_SIZE), the same model
threads (ARGOS_INTRA_THREADS; one search at a time, ARGOS_INTER_THREADS=1), CTranslate2's compute type
(ARGOS_COMPUTE_TYPE, --lt-compute-type) and ARGOS_PACKAGE_INDEX naming a local folder whose index.json is
an empty list. With fewer than two packages installed, LibreTranslate looks for models at every start:
it fetches argostranslate's package index (from GitHub); offline, without a local copy of the index,
argostranslate retries that fetch recursively, about a thousand times, until Python's recursion limit
ends it. With the empty local index nothing is fetched and the look stops at once ("Unavailable language
codes", printed as "Cannot update models (normal if you're offline)"). --load-only matters too: without
it the look goes on to download MiniSBD's sentence models (ten tries, about eight minutes, offline).
Sentences are split by the package's MiniSBD model, which seq2seq-export's package carries (rules: no
download). A package without a minisbd/ folder would have argostranslate download MiniSBD's trained model
on the first request (minisbd.models.get_model_file, github.com/LibreTranslate/MiniSBD/releases), so for
such a package a launcher puts sentencex's splitter in its place (when installed there; each text stays
whole otherwise); LibreTranslate is unchanged otherwise.

Differences that remain between LibreTranslate and seq2seq-serve: CTranslate2 against our PyTorch engine;
beam scores divided by length ** 0.2 (fixed in argostranslate) against the model's tuned GNMT length
penalty; at most 256 output tokens against our max_len_a * source length + max_len_b (a model that
repeats itself writes longer translations there: the "output words" column shows it); and each request
searched alone, where seq2seq-serve batches concurrent requests together.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common import describe_machine, format_table, load_average, print_headline
from serve import free_port, percentile, start_server

ROOT = Path(__file__).resolve().parents[1]

# For a package without a minisbd/ model, run in LibreTranslate's own Python: argostranslate's sentence
# splitter replaced by sentencex (MiniSBD's model would be downloaded on the first request), then
# LibreTranslate's command line, unchanged.
LAUNCHER = """\
import sys
import argostranslate.sbd as sbd
try:
    from sentencex import segment
except ImportError:
    segment = None

def split_sentences(self, text):
    if segment is None:
        return [text]
    return [s.strip() for s in segment(self.pkg.from_code, text) if s.strip()] or [text]

sbd.MiniSBDSentencizer.split_sentences = split_sentences
sys.argv = ["libretranslate", *sys.argv[1:]]
from libretranslate.main import main
main()
"""


@dataclass(frozen=True)
class Run:
    """One pass of the load over one route: sentences/s, each request's seconds, the translations."""

    speed: float
    latencies: list[float]
    answers: list[str]


@dataclass(frozen=True)
class Route:
    """One candidate: where it is posted, the body for one text, and the translation in its answer."""

    name: str
    url: str
    body: Callable[[str], dict]
    answer: Callable[[dict], str]


def own_route(url: str) -> Route:
    return Route(
        "seq2seq-serve /translate",
        f"{url}/translate",
        lambda text: {"texts": [text], "segment": "sentences", "markup": False},
        lambda answer: answer["translations"][0],
    )


def libretranslate_route(name: str, url: str, source: str, target: str) -> Route:
    return Route(
        name,
        f"{url}/translate",
        lambda text: {"q": text, "source": source, "target": target, "format": "text"},
        lambda answer: answer["translatedText"],
    )


# ----------------------------------------------------------------------------- the load


def one_sentence_texts(path: Path, count: int) -> list[str]:
    """The first `count` lines of `path` that sentencex takes as one sentence each."""
    from sentencex import segment

    if not path.is_file():
        sys.exit(f"{path} does not exist; run seq2seq-prepare first or pass --data-dir")
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if len([part for part in segment("en", line) if part.strip()]) == 1:
            texts.append(line.strip())
        if len(texts) == count:
            break
    return texts


async def load(route: Route, texts: list[str], clients: int) -> Run:
    """`clients` clients sending one text per request to `route` until every text is sent."""
    import httpx

    todo = iter(enumerate(texts))
    latencies: list[float] = []
    answers = [""] * len(texts)

    async def client(http: httpx.AsyncClient) -> None:
        for index, text in todo:
            start = time.perf_counter()
            response = await http.post(route.url, json=route.body(text))
            if response.status_code != 200:
                sys.exit(f"{route.name} answered {response.status_code}: {response.text[:300]}")
            latencies.append(time.perf_counter() - start)
            answers[index] = route.answer(response.json())

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        seconds = time.perf_counter() - start
    return Run(len(texts) / seconds, latencies, answers)


def warm_up(routes: list[Route], texts: list[str], clients: int) -> dict[str, float]:
    """Send `texts` to every route untimed; per route, the share of its translations equal to the first
    route's."""
    answers = {route.name: asyncio.run(load(route, texts, clients)).answers for route in routes}
    first = answers[routes[0].name]
    return {name: sum(a == b for a, b in zip(found, first)) / len(first) for name, found in answers.items()}


def interleaved(routes: list[Route], texts: list[str], clients: int, rounds: int) -> dict[str, list[Run]]:
    """Per route, each round's run; the order of the routes rotates every round."""
    runs: dict[str, list[Run]] = {route.name: [] for route in routes}
    for index in range(rounds):
        shift = index % len(routes)
        for route in routes[shift:] + routes[:shift]:
            runs[route.name].append(asyncio.run(load(route, texts, clients)))
    return runs


# ----------------------------------------------------------------------------- LibreTranslate itself


def export_argos(checkpoint: Path, workdir: Path, overrides: list[str]) -> Path:
    """The .argosmodel that `seq2seq-export target=argos` writes for `checkpoint`."""
    output = workdir / "export"
    command = [sys.executable, "-m", "seq2seq.cli.export", f"checkpoint={checkpoint}", "target=argos",
               f"output_dir={output}", *overrides]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        sys.exit(f"seq2seq-export target=argos failed (or pass --argos-package FILE.argosmodel):\n"
                 f"{(result.stderr or result.stdout)[-2000:]}")  # fmt: skip
    found = sorted(output.rglob("*.argosmodel"))
    if not found:
        sys.exit(f"seq2seq-export target=argos wrote no .argosmodel into {output}")
    return found[0]


def libretranslate_environment(workdir: Path, args: argparse.Namespace) -> dict[str, str]:
    """Every directory argostranslate writes under `workdir`, its package index a local empty list (so
    that nothing is fetched), and the search and threads of seq2seq-serve."""
    index = workdir / "index"
    index.mkdir(parents=True, exist_ok=True)
    (index / "index.json").write_text("[]")
    return {
        **os.environ,
        "HOME": str(workdir / "home"),
        "XDG_DATA_HOME": str(workdir / "data"),
        "XDG_CONFIG_HOME": str(workdir / "config"),
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "ARGOS_PACKAGES_DIR": str(workdir / "packages"),
        "ARGOS_PACKAGE_INDEX": index.as_uri() + "/",
        "ARGOS_DEVICE_TYPE": "cpu",
        "ARGOS_INTER_THREADS": "1",
        "ARGOS_INTRA_THREADS": str(args.threads),
        "OMP_NUM_THREADS": str(args.threads),
        "ARGOS_BEAM_SIZE": str(args.beam_size),
        "ARGOS_COMPUTE_TYPE": args.lt_compute_type,
    }


def start_libretranslate(
    args: argparse.Namespace, package: Path, workdir: Path, languages: tuple[str, str]
) -> tuple[subprocess.Popen, str]:
    """LibreTranslate on `package` (unpacked into its packages directory, as argospm installs one), offline;
    its output goes to workdir/libretranslate.log."""
    import httpx

    environment = libretranslate_environment(workdir, args)
    with zipfile.ZipFile(package) as archive:
        archive.extractall(environment["ARGOS_PACKAGES_DIR"])
    port = free_port()
    command = [*libretranslate_command(args.libretranslate_python, package)[0], "--host", "127.0.0.1",
               "--port", str(port), "--load-only", ",".join(languages), "--threads", str(args.lt_threads),
               "--disable-web-ui", "--disable-files-translation"]  # fmt: skip
    log = (workdir / "libretranslate.log").open("w")
    server = subprocess.Popen(command, env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    url = f"http://127.0.0.1:{port}"
    for _ in range(900):
        if server.poll() is not None:
            break
        try:
            if httpx.get(f"{url}/languages", timeout=1).status_code == 200:
                return server, url
        except httpx.TransportError:
            time.sleep(0.2)
    stop(server)
    tail = (workdir / "libretranslate.log").read_text(errors="replace")[-3000:]
    sys.exit(f"LibreTranslate did not start:\n{tail}")


def libretranslate_version(python: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('libretranslate'))"
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return result.stdout.strip()


def libretranslate_command(python: Path, package: Path) -> tuple[list[str], str]:
    """How LibreTranslate is started on `package`, and the sentence splitter it then has: unchanged with the
    package's own MiniSBD model (minisbd/*.onnx), else through LAUNCHER."""
    with zipfile.ZipFile(package) as archive:
        names = [Path(name) for name in archive.namelist()]
    own = [name for name in names if name.parent.name == "minisbd" and name.suffix == ".onnx"]
    if own:
        return [str(python), "-m", "libretranslate.main"], f"the package's MiniSBD model ({own[0].name})"
    found = subprocess.run([str(python), "-c", "import sentencex"], capture_output=True).returncode == 0
    split = "sentencex" if found else "none (sentencex is not installed there: each text stays whole)"
    return [str(python), "-c", LAUNCHER], f"{split}, put in place of MiniSBD (the package has no minisbd/)"


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


# ----------------------------------------------------------------------------- report


def paired_ratios(runs: list[Run], own: list[Run]) -> list[float]:
    """Each round's sentences/s over the same round's sentences/s of `own`."""
    return [run.speed / other.speed for run, other in zip(runs, own)]


def row(name: str, runs: list[Run], own: list[Run]) -> list[str]:
    """A table row: median sentences/s, spread of the rounds, p50/p95 latency, ratio, output words."""
    speeds = [run.speed for run in runs]
    latencies = [latency for run in runs for latency in run.latencies]
    median, ratios = statistics.median(speeds), paired_ratios(runs, own)
    words = statistics.mean(len(answer.split()) for answer in runs[0].answers)
    return [name, f"{median:.1f}", f"{(max(speeds) - min(speeds)) / median:.0%}",
            f"{percentile(latencies, 0.5):.3f}", f"{percentile(latencies, 0.95):.3f}",
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
            f"{words:.1f}"]  # fmt: skip


def report(runs: dict[str, list[Run]], clients: int, csv: bool) -> None:
    names = list(runs)
    own = runs[names[0]]
    header = ["server and route", "sentences/s", "spread", "p50 s", "p95 s", "of /translate (min-max)",
              "output words"]  # fmt: skip
    print(f"\n{clients} client(s), {len(own)} rounds; load average {load_average()}\n")
    print(format_table(header, [row(name, runs[name], own) for name in names], csv=csv))
    for name in names:
        print(f"  rounds, {name}: {', '.join(f'{run.speed:.1f}' for run in runs[name])} sentences/s")
    route = statistics.median(paired_ratios(runs[names[1]], own))
    print_headline(f"LibreTranslate route sentences/s, {clients} clients", "own /translate, same server",
                   f"{route:.2f}x", ">= 0.95x")  # fmt: skip
    if len(names) > 3:
        ours = statistics.median(paired_ratios(runs[names[2]], runs[names[3]]))
        print_headline(f"seq2seq-serve sentences/s, {clients} clients, same model and search",
                       names[3], f"{ours:.2f}x")  # fmt: skip


# ----------------------------------------------------------------------------- main


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module's text as written, and each option's default."""


def build_parser() -> argparse.ArgumentParser:
    first, rest = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(description=first, epilog=rest, formatter_class=HelpFormatter)
    checkpoint = ROOT / "runs" / "align-layers" / "best.pt"
    parser.add_argument("--checkpoint", type=Path, default=checkpoint, help="the model, served by both")
    data = ROOT / "data" / "bible_en_es"
    parser.add_argument("--data-dir", type=Path, default=data, help="where test.en is")
    parser.add_argument("--sentences", type=int, default=400, help="one-sentence verses sent per round")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32], help="concurrent clients")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each candidate")
    parser.add_argument("--warmup", type=int, default=64, help="verses each candidate gets first, untimed")
    parser.add_argument("--beam-size", type=int, default=5, help="the servers' beam")
    parser.add_argument("--threads", type=int, default=2, help="model threads of each server")
    parser.add_argument("--server", nargs="*", default=[], help="seq2seq-serve overrides: batch_wait_ms=10")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of Markdown")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 24 verses, 4 clients, 2 rounds")
    lt = parser.add_argument_group("LibreTranslate itself")
    lt.add_argument("--libretranslate-python", type=Path, help="Python of a virtualenv with LibreTranslate")
    lt.add_argument("--argos-package", type=Path, help="the .argosmodel to run, not an export")
    lt.add_argument("--export", nargs="*", default=[], help="seq2seq-export overrides: weight_format=int8")
    lt.add_argument("--lt-compute-type", default="float32", help="LibreTranslate's ARGOS_COMPUTE_TYPE")
    lt.add_argument("--lt-threads", type=int, default=4, help="LibreTranslate's request threads (--threads)")
    return parser


def parse_args() -> argparse.Namespace:
    parser = build_parser()
    if parser.parse_args().quick:  # other defaults; options given still win
        parser.set_defaults(sentences=24, clients=[4], rounds=2, warmup=8)
    args = parser.parse_args()
    if not args.checkpoint.is_file():
        sys.exit(f"{args.checkpoint} does not exist; train one or pass --checkpoint")
    if args.argos_package and not args.argos_package.is_file():
        sys.exit(f"{args.argos_package} does not exist")
    return args


def served_pair(url: str) -> tuple[str, str]:
    """The model's source and target language, as the LibreTranslate route names them."""
    import httpx

    languages = httpx.get(f"{url}/libretranslate/languages").json()
    if not languages or not languages[0]["targets"]:
        sys.exit(f"the model names no language pair ({languages}); the LibreTranslate API needs one")
    return languages[0]["code"], languages[0]["targets"][0]


def describe(args: argparse.Namespace, texts: list[str]) -> None:
    import torch

    print(describe_machine(args.threads))
    print(f"CPU capability: {torch.backends.cpu.get_cpu_capability()}")
    words = statistics.mean(len(text.split()) for text in texts)
    print(f"{len(texts)} one-sentence Bible test verses ({words:.1f} words on average), beam "
          f"{args.beam_size}, {args.threads} model threads per server; {args.checkpoint}")  # fmt: skip


def add_libretranslate(
    args: argparse.Namespace, workdir: Path, pair: tuple[str, str], stack: contextlib.ExitStack
) -> list[Route]:
    """LibreTranslate itself on the checkpoint's Argos package, and seq2seq-serve on the package's own
    CTranslate2 model with argostranslate's search (the same translations: equal work), both stopped when
    `stack` closes."""
    package = args.argos_package or export_argos(args.checkpoint, workdir, args.export)
    server, url = start_libretranslate(args, package, workdir, pair)
    stack.callback(stop, server)
    version = libretranslate_version(args.libretranslate_python)
    split = libretranslate_command(args.libretranslate_python, package)[1]
    print(f"LibreTranslate {version} on {package.name} (CTranslate2 {args.lt_compute_type}, "
          f"{args.lt_threads} request threads), sentence splitter: {split}")  # fmt: skip
    [model] = sorted((workdir / "packages").glob("*/model"))
    matched, matched_url = start_server(model, args.threads, [*argos_search(args), *args.server])
    stack.callback(stop, matched)
    return [
        libretranslate_route("seq2seq-serve, package model, Argos search /libretranslate/translate",
                             f"{matched_url}/libretranslate", *pair),
        libretranslate_route(f"LibreTranslate {version} /translate", url, *pair),
    ]  # fmt: skip


def argos_search(args: argparse.Namespace) -> list[str]:
    """seq2seq-serve overrides for argostranslate's search on the package's CTranslate2 model: its beam
    (ARGOS_BEAM_SIZE), CTranslate2's length penalty 0.2, up to 256 output tokens, its compute type."""
    quantization = "int8" if args.lt_compute_type.startswith("int8") else "none"
    return [f"decode.beam_size={args.beam_size}", "decode.length_penalty=0.2", "decode.max_len_a=0",
            "decode.max_len_b=256", f"quantization={quantization}"]  # fmt: skip


def main() -> None:
    args = parse_args()
    texts = one_sentence_texts(args.data_dir / "test.en", args.sentences)
    describe(args, texts)
    with tempfile.TemporaryDirectory(prefix="libretranslate-bench-") as tmp, contextlib.ExitStack() as stack:
        overrides = [f"decode.beam_size={args.beam_size}", *args.server]
        server, url = start_server(args.checkpoint, args.threads, overrides)
        stack.callback(stop, server)
        pair = served_pair(url)
        routes = [own_route(url), libretranslate_route("seq2seq-serve /libretranslate/translate",
                                                       f"{url}/libretranslate", *pair)]  # fmt: skip
        if args.libretranslate_python:
            routes += add_libretranslate(args, Path(tmp), pair, stack)
        for route in routes:
            print(f"  {route.name}: POST {route.url} {json.dumps(route.body('...'))}")
        same = warm_up(routes, texts[: args.warmup], max(args.clients))
        print("warm-up translations equal to /translate's: "
              + ", ".join(f"{name} {share:.0%}" for name, share in same.items()))  # fmt: skip
        if len(routes) > 2:
            matched = warm_up(routes[2:], texts[: args.warmup], max(args.clients))
            print(f"LibreTranslate's warm-up translations equal to seq2seq-serve's with the same model and "
                  f"search: {matched[routes[3].name]:.0%}")  # fmt: skip
        for clients in args.clients:
            report(interleaved(routes, texts, clients, args.rounds), clients, args.csv)
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()

"""Shared helpers for the benchmarks: options, threads, timing, matmul peak, synthetic batches, the Marian
baseline, table output.

The benchmarks are scripts, not tests: they print what they measured (with the machine's load
average, since a busy machine changes every number) and leave the judging to the reader.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.profiler import ProfilerActivity, profile

from seq2seq.model import size_names

CPU = torch.device("cpu")
PAD, BOS, EOS = 0, 1, 2
FIRST_WORD = 4  # token ids below this are reserved for pad/bos/eos/unk


# ----------------------------------------------------------------------------- options


def training_parser(
    description: str, *, size: str, tokens: tuple[int, str], steps: tuple[int, str], quick: str
) -> argparse.ArgumentParser:
    """The options of the benchmarks that time training steps: --size, --tokens and --steps (each a
    (default, help) pair), --threads, --csv and --quick (its help)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", choices=size_names(), default=size)
    for name, (default, help_text) in (("--tokens", tokens), ("--steps", steps)):
        parser.add_argument(name, type=int, default=default, help=help_text)
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: all cores)")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of Markdown")
    parser.add_argument("--quick", action="store_true", help=quick)
    return parser


# ----------------------------------------------------------------------------- machine


def set_threads(threads: int | None) -> int:
    """Use `threads` intra-op threads (default: all cores); returns the number in use."""
    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, e.g. "0.12 0.30 0.41"."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def describe_machine(threads: int) -> str:
    """One line naming the software and hardware a result was measured on."""
    bf16 = "yes" if torch.cpu._is_avx512_bf16_supported() else "no"
    return (
        f"torch {torch.__version__}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, {threads} threads, AVX512-BF16: {bf16}, load average {load_average()}"
    )


# ----------------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Wall-clock seconds of the measured repetitions (warm-up excluded)."""

    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the repetitions were."""
        return (max(self.seconds) - min(self.seconds)) / self.median


def time_call(fn: Callable[[], object], *, warmup: int, repeats: int) -> Timing:
    """Run `fn` `warmup` times untimed, then `repeats` times timed."""
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return Timing(seconds)


def time_interleaved(fns: dict[str, Callable[[], object]], *, warmup: int, repeats: int) -> dict[str, Timing]:
    """Time several candidates round-robin, rotating the order every round.

    On a shared machine the load drifts during a run; interleaving spreads that drift over all
    candidates instead of penalising whichever happened to run during a busy minute.
    """
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeats):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            fns[name]()
            seconds[name].append(time.perf_counter() - start)
    return {name: Timing(s) for name, s in seconds.items()}


def matmul_peak(dtype: torch.dtype, *, size: int = 2048, repeats: int = 5) -> float:
    """Best achieved GFLOP/s of a (size x size) @ (size x size) `torch.matmul` on the current threads."""
    a = torch.randn(size, size).to(dtype)
    b = torch.randn(size, size).to(dtype)
    timing = time_call(lambda: torch.matmul(a, b), warmup=2, repeats=repeats)
    return 2 * size**3 / timing.best / 1e9


# ----------------------------------------------------------------------------- memory


def allocator_peak(fn: Callable[[], object]) -> tuple[int, int]:
    """Bytes of tensor memory `fn` needs at its peak above what was allocated when it started,
    and the net change when it returns.

    PyTorch 2.13 has no CPU counterpart of `torch.cuda.max_memory_allocated`, but its profiler
    (with `profile_memory=True`) records every allocation and free of the CPU allocator with a time
    stamp; the running sum of those records is the allocated-bytes curve. This counts tensor storage
    only, to the byte, independent of malloc's caching (it misses oneDNN's private scratch buffers).
    """
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    records = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    records.sort(key=lambda e: e.start_ns())
    current = peak = 0
    for record in records:
        current += record.nbytes()
        peak = max(peak, current)
    return peak, current


def _status_kib(field: str) -> int | None:
    """A `VmRSS`-style field of /proc/self/status in KiB (None off Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_peak_during(fn: Callable[[], object]) -> int | None:
    """Bytes by which the process's peak resident set rose above its current size while `fn` ran.

    The high-water mark is reset to the current RSS first (Linux: `5` into /proc/self/clear_refs);
    where that is impossible, `ru_maxrss` from before is the baseline (then earlier peaks hide
    part of this one). Includes everything malloc and libraries touch, so run it in a fresh process
    and before other big steps: memory freed to malloc but kept by it is reused without new pages.
    """
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        before = _status_kib("VmRSS")
    except OSError:
        before = None
    if before is None:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    fn()
    after = _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (after - before) * 1024


def run_worker(script: str, arguments: list[str]) -> dict:
    """Run `python script arguments` in a fresh process; it must print one JSON object last."""
    completed = subprocess.run(
        [sys.executable, script, *arguments], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"worker {arguments} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- data


def sentence_lengths(n: int, mean: float, *, generator: torch.Generator) -> Tensor:
    """Lengths with a realistic spread: log-normal around `mean`, clipped to [mean/4, 2*mean].

    Shapes: -> (n,) int64, every value >= 2.
    """
    sigma = 0.4
    # E[lognormal] = exp(mu + sigma^2 / 2): choose mu so the mean before clipping is `mean`.
    mu = torch.log(torch.tensor(float(mean))) - sigma**2 / 2
    raw = torch.exp(mu + sigma * torch.randn(n, generator=generator))
    return raw.round().clamp(max(2, round(mean / 4)), max(2, round(2 * mean))).long()


def right_padded(lengths: Tensor, vocab_size: int, *, generator: torch.Generator) -> Tensor:
    """Random word ids, row i real for its first lengths[i] positions and PAD after.

    Shapes: lengths (B,) -> (B, max(lengths)) int64
    """
    batch, width = lengths.numel(), int(lengths.max())
    tokens = torch.randint(FIRST_WORD, vocab_size, (batch, width), generator=generator)
    real = torch.arange(width)[None, :] < lengths[:, None]  # (B, L)
    return tokens.masked_fill(~real, PAD)


@dataclass
class Batch:
    """One teacher-forced batch. src (B, S); tgt_in, tgt_out (B, T); all right-padded with PAD."""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor

    @property
    def target_tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())

    @property
    def source_tokens(self) -> int:
        return int((self.src != PAD).sum())

    def padding_share(self) -> float:
        """Share of the padded src + tgt positions that are padding."""
        positions = self.src.numel() + self.tgt_out.numel()
        return 1 - (self.source_tokens + self.target_tokens) / positions


def synthetic_batch(
    target_tokens: int,
    *,
    vocab_size: int,
    mean_length: float = 32.0,
    seed: int = 0,
    length_sorted: bool = False,
) -> Batch:
    """About `target_tokens` real target tokens in sentences of ~`mean_length` (eos included).

    By default the lengths are drawn independently (a random batch: much padding). With
    `length_sorted` the batch is what token-budget batching makes: neighbours from the middle of a
    length-sorted pool 32 times larger, in random order (little padding).
    Source lengths are the target's times a random ratio in [0.8, 1.25], as for related languages.
    tgt_in is BOS + words, tgt_out is words + EOS, so both have the same length per row.
    """
    generator = torch.Generator().manual_seed(seed)
    n = max(1, round(target_tokens / mean_length))
    if length_sorted:
        pool = sentence_lengths(32 * n, mean_length, generator=generator).sort().values
        middle = pool[len(pool) // 2 - n // 2 :][:n]
        n = max(1, round(target_tokens / middle.float().mean().item()))
        tgt_len = pool[len(pool) // 2 - n // 2 :][:n][torch.randperm(n, generator=generator)]
    else:
        tgt_len = sentence_lengths(n, mean_length, generator=generator)
    ratio = 0.8 + 0.45 * torch.rand(n, generator=generator)
    src_len = (tgt_len * ratio).round().long().clamp(min=2)
    src = right_padded(src_len, vocab_size, generator=generator)
    src[torch.arange(n), src_len - 1] = EOS
    words = right_padded(tgt_len - 1, vocab_size, generator=generator)  # (B, T-1)
    tgt_in = torch.cat([torch.full((n, 1), BOS), words], dim=1)  # (B, T)
    tgt_out = torch.cat([words, torch.full((n, 1), PAD)], dim=1)  # (B, T)
    tgt_out[torch.arange(n), tgt_len - 1] = EOS
    return Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out)


# ----------------------------------------------------------------------------- output


# ----------------------------------------------------------------------------- the Marian baseline


def marian_model(sizes: Mapping[str, int], vocab: int, *, attention: str | None = None, **settings: Any):
    """MarianMTModel at random init with one of our sizes (model_size: d_model, n_heads, ffn_dim, layers),
    made like ours where Marian can be: relu, scaled embeddings shared by encoder and decoder, no attention
    or activation dropout. `settings`: the other MarianConfig fields; `attention`: "sdpa" or "eager"."""
    from transformers import MarianConfig, MarianMTModel

    per_side = {"attention_heads": sizes["n_heads"], "ffn_dim": sizes["ffn_dim"]}
    config = MarianConfig(
        vocab_size=vocab, decoder_vocab_size=vocab, d_model=sizes["d_model"],
        encoder_layers=sizes["encoder_layers"], decoder_layers=sizes["decoder_layers"],
        **{f"{side}_{name}": value for side in ("encoder", "decoder") for name, value in per_side.items()},
        activation_function="relu", attention_dropout=0.0, activation_dropout=0.0, scale_embedding=True,
        share_encoder_decoder_embeddings=True, **settings,
    )  # fmt: skip
    if attention is not None:
        config._attn_implementation = attention
    return MarianMTModel(config)


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]], *, csv: bool = False) -> str:
    """A Markdown table (or CSV with `csv=True`); floats are printed as already formatted by the caller."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    if csv:
        return "\n".join(",".join(row) for row in cells)
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f}"


HEADLINE = "headline: "


def print_headline(measurement: str, peer: str, ratio: str, target: str = "") -> None:
    """One result line that run_all.py collects into its summary table (fields split by ' | ')."""
    print(f"{HEADLINE}{measurement} | {peer} | {ratio} | {target or '-'}")

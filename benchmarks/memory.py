#!/usr/bin/env python
"""Memory benchmarks: gradient checkpointing of a training step, and local vs full attention.

    python benchmarks/memory.py                        # both parts at default settings
    python benchmarks/memory.py --part checkpointing   # base model, with and without checkpointing
    python benchmarks/memory.py --part attention       # window-64 vs full self-attention, S = 1k..16k
    python benchmarks/memory.py --quick                # a smoke run

(a) One training step (forward, label-smoothed loss, backward, AdamW) of the `base` model, each
    configuration in a fresh process. Between steps a training process holds the parameters, their
    gradients and AdamW's two moments; "activation memory" is what a step needs on top of that:
    its peak of allocated tensor bytes above the level when it started (see common.allocator_peak).
    The growth of the process's peak RSS during its first step is printed as a cross-check.
(b) One self-attention layer (QKV + output projections, batch 1, 4 heads, d_model 256), forward and
    backward, with a local window of 64 and with full attention, at growing lengths.
"""

from __future__ import annotations

import argparse
import json

import torch
from common import (
    CPU,
    PAD,
    Timing,
    allocator_peak,
    describe_machine,
    format_table,
    load_average,
    mib,
    print_headline,
    rss_peak_during,
    run_worker,
    set_threads,
    synthetic_batch,
    time_call,
    time_interleaved,
    training_parser,
)

from seq2seq.model import build_model, count_parameters, model_size
from seq2seq.nn.attention import AttentionContext, SelfAttention
from seq2seq.precision import autocast
from seq2seq.train.loss import label_smoothed_nll

VOCAB = 8000
GIB = 2**30


# ----------------------------------------------------------------------------- (a) checkpointing


def build_training_step(args: argparse.Namespace, checkpointing: bool):
    """The model and a closure running one training step, as in training: gradients and AdamW's
    moments stay allocated between steps (`zero_grad(set_to_none=False)`)."""
    torch.manual_seed(0)
    model = build_model(
        src_vocab_size=VOCAB,
        tgt_vocab_size=VOCAB,
        pad_id=PAD,
        **model_size(args.size),
        checkpoint_activations=checkpointing,
    ).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    batch = synthetic_batch(args.tokens, vocab_size=VOCAB)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()  # creates exp_avg and exp_avg_sq

    def step() -> None:
        with autocast(args.dtype, CPU):
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
        loss_sum, _, n_tokens = label_smoothed_nll(logits, batch.tgt_out, epsilon=0.1, pad_id=PAD)
        (loss_sum / n_tokens).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)

    return model, step


def memory_worker(args: argparse.Namespace) -> dict:
    """Memory of one configuration, measured in this fresh process; returns a JSON-able dict."""
    set_threads(args.threads)
    model, step = build_training_step(args, args.checkpointing)
    rss = rss_peak_during(step)  # the first step: nothing is cached by malloc yet
    peak, _ = allocator_peak(step)
    n_params = count_parameters(model)
    return dict(params=n_params, static_bytes=4 * n_params * 4, activation_bytes=peak, rss_bytes=rss)


def time_checkpointing(args: argparse.Namespace) -> dict[bool, Timing]:
    """Seconds per step with and without checkpointing, interleaved on one model (the flag is
    read at every forward), so that load changes during the run hit both alike."""
    model, step = build_training_step(args, checkpointing=False)
    stacks = (model.encoder, model.decoder)

    def with_flag(flag: bool):
        def run() -> None:
            for stack in stacks:
                stack.checkpoint_activations = flag
            step()

        return run

    timings = time_interleaved({"off": with_flag(False), "on": with_flag(True)}, warmup=1, repeats=args.steps)
    return {False: timings["off"], True: timings["on"]}


def checkpointing_part(args: argparse.Namespace) -> None:
    dims = model_size(args.size)
    batch = synthetic_batch(args.tokens, vocab_size=VOCAB)
    print(
        f"\n## (a) gradient checkpointing: {args.size} {dims}, {args.dtype}, "
        f"src {tuple(batch.src.shape)}, tgt {tuple(batch.tgt_in.shape)}, "
        f"{batch.target_tokens:,} target tokens; median of {args.steps} interleaved steps",
        flush=True,
    )
    memory = {}
    for flag in (False, True):
        worker_args = [
            "--worker",
            "memory",
            "--size",
            args.size,
            "--tokens",
            str(args.tokens),
            "--dtype",
            args.dtype,
        ]
        if args.threads:
            worker_args += ["--threads", str(args.threads)]
        if flag:
            worker_args.append("--checkpointing")
        memory[flag] = run_worker(__file__, worker_args)
    timing = time_checkpointing(args)
    rows = []
    for flag in (False, True):
        r, t = memory[flag], timing[flag]
        rows.append(
            [
                "on" if flag else "off",
                mib(r["static_bytes"]),
                mib(r["activation_bytes"]),
                mib(r["static_bytes"] + r["activation_bytes"]),
                mib(r["rss_bytes"]),
                f"{t.median:.2f}",
                f"{t.spread:.0%}",
            ]
        )
    print(
        "\n"
        + format_table(
            [
                "checkpointing",
                "params+grads+AdamW MiB",
                "activation MiB",
                "total peak MiB",
                "RSS rise MiB",
                "s/step",
                "spread",
            ],
            rows,
            csv=args.csv,
        )
    )
    plain, ckpt = memory[False], memory[True]
    saved = 1 - ckpt["activation_bytes"] / plain["activation_bytes"]
    rss_saved = 1 - ckpt["rss_bytes"] / plain["rss_bytes"]
    slower = timing[True].median / timing[False].median - 1
    print(
        f"\ncheckpointing: {saved:.0%} less activation memory ({rss_saved:.0%} less by RSS rise), "
        f"{slower:+.0%} time per step (targets: >= 50% less, <= +35%); load {load_average()}"
    )
    what = "gradient checkpointing, base, training step"
    print_headline(f"{what}: activation memory", "same model without", f"{saved:.0%} less", ">= 50% less")
    print_headline(f"{what}: time", "same model without", f"{slower:+.0%}", "<= +35%")


# ----------------------------------------------------------------------------- (b) local attention


def attention_run(length: int, window: int | None, dtype: str, args: argparse.Namespace) -> tuple[int, float]:
    """Peak bytes and seconds of one self-attention layer's forward + backward at this length."""
    torch.manual_seed(0)
    layer = SelfAttention(args.d_model, args.heads, window=window)
    x = torch.randn(1, length, args.d_model, requires_grad=True)  # (B=1, S, D)
    positions = torch.arange(length)
    context = AttentionContext(keep=None, causal=False, q_positions=positions, k_positions=positions)

    def forward_backward() -> None:
        with autocast(dtype, CPU):
            out = layer(x, context)  # (1, S, D)
        out.float().square().mean().backward()
        x.grad = None
        layer.zero_grad(set_to_none=True)

    peak, _ = allocator_peak(forward_backward)
    seconds = time_call(forward_backward, warmup=0, repeats=1).best
    return peak, seconds


def attention_series(kind: str, dtype: str, args: argparse.Namespace) -> dict[int, tuple[int, float] | str]:
    """Measure one configuration at every length, skipping those extrapolated to need too much."""
    window = args.window if kind == "local" else None
    attention_run(4 * args.window, window, dtype, args)  # warm-up: one-time initialisation excluded
    results: dict[int, tuple[int, float] | str] = {}
    previous: tuple[int, float] | None = None
    growth = 4.0  # assume quadratic until measured
    for length in args.lengths:
        if previous is not None and previous[0] * growth > args.max_gib * GIB:
            results[length] = f"skipped (~{previous[0] * growth / GIB:.0f} GiB expected)"
            continue
        if previous is not None and previous[1] * 4 > args.max_seconds:
            results[length] = f"skipped (~{previous[1] * 4:.0f} s expected)"
            continue
        measured = attention_run(length, window, dtype, args)
        if previous is not None:
            growth = max(2.0, measured[0] / previous[0])
        results[length] = previous = measured
        print(
            f"  {kind:5s} {dtype} S={length:6d}: {mib(measured[0]):>8s} MiB, {measured[1]:6.2f} s, "
            f"load {load_average()}",
            flush=True,
        )
    return results


def attention_part(args: argparse.Namespace) -> None:
    print(
        f"\n## (b) self-attention forward+backward, batch 1, {args.heads} heads, d_model {args.d_model}: "
        f"window {args.window} vs full; peak allocated bytes above the inputs",
        flush=True,
    )
    configs = [(kind, dtype) for dtype in args.attention_dtypes for kind in ("local", "full")]
    results = {config: attention_series(*config, args) for config in configs}
    names = [f"{kind} {dtype}" for kind, dtype in configs]
    memory_rows, time_rows = [], []
    for index, length in enumerate(args.lengths):
        memory_rows.append([f"{length:,}"])
        time_rows.append([f"{length:,}"])
        for config in configs:
            value = results[config][length]
            before = results[config].get(args.lengths[index - 1]) if index else None
            if isinstance(value, str):
                memory_rows[-1].append(value)
                time_rows[-1].append("")
                continue
            growth = f" ({value[0] / before[0]:.1f}x)" if isinstance(before, tuple) else ""
            memory_rows[-1].append(f"{mib(value[0])}{growth}")
            time_rows[-1].append(f"{value[1]:.2f}")
    print("\npeak MiB (growth from S/2):\n")
    print(format_table(["S", *names], memory_rows, csv=args.csv))
    print("\nseconds per forward + backward:\n")
    print(format_table(["S", *names], time_rows, csv=args.csv))
    print(f"\ngrowth per doubling: linear ~2x, quadratic ~4x; load {load_average()}")


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = training_parser(
        __doc__.splitlines()[0], size="base", tokens=(2048, "target tokens in the training batch"),
        steps=(3, "timed training steps per configuration"), quick="small model and lengths: a smoke run",
    )  # fmt: skip
    parser.add_argument("--part", choices=["all", "checkpointing", "attention"], default="all")
    parser.add_argument(
        "--dtype",
        choices=["fp32", "bf16"],
        default="bf16",
        help="training-step precision (bf16 autocast, as trainer.precision=bf16)",
    )
    parser.add_argument(
        "--attention-dtypes",
        nargs="+",
        choices=["fp32", "bf16"],
        default=["fp32", "bf16"],
        help="fp32 runs PyTorch SDPA; bf16 autocast runs our matmul-softmax path",
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--max-gib", type=float, default=4.0, help="skip lengths expected to need more")
    parser.add_argument(
        "--max-seconds", type=float, default=60.0, help="skip lengths expected to take longer"
    )
    parser.add_argument("--worker", choices=["memory"], help=argparse.SUPPRESS)
    parser.add_argument("--checkpointing", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.tokens, args.steps, args.lengths = "tiny", 512, 1, [256, 512, 1024]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker == "memory":
        print(json.dumps(memory_worker(args)))
        return 0
    threads = set_threads(args.threads)
    print(describe_machine(threads))
    if args.part in ("all", "checkpointing"):
        checkpointing_part(args)
    if args.part in ("all", "attention"):
        attention_part(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python
"""What a training run spends outside learning, each part against its alternative, interleaved.

    python benchmarks/train_overheads.py runs/quickstart/checkpoint_900.pt       # the Bible dev set
    python benchmarks/train_overheads.py CKPT --dev-src dev.de --dev-ref dev.en --precision bf16
    python benchmarks/train_overheads.py CKPT --quick                             # a smoke run

On the checkpoint's model (a trained one, so that greedy outputs have realistic lengths) it times:
  - one training step (forward + loss + backward) on a batch of --max-tokens: the unit of learning;
  - the optimizer step: AdamW as torch runs it by default on a CPU (a loop over the tensors) and fused;
  - validation's dev-loss pass over the whole dev set and over --sentences evenly spread pairs;
  - validation's greedy decoding of --sentences dev sentences at several token budgets per batch;
  - writing a weights-only snapshot (trainer.average_fraction writes one every 25 updates).
Then it prints what each costs over a --minutes run that validates every --validate-minutes, as a share
of the run: the time those parts take from updates.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from common import describe_machine, format_table, load_average, print_headline, set_threads, time_interleaved

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.collate import collate
from seq2seq.decode import SearchOptions
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.search import search_ids
from seq2seq.inference.loading import load_for_inference
from seq2seq.precision import autocast
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.objective import batch_loss
from seq2seq.train.optim import build_adamw

CPU = torch.device("cpu")
BUDGETS = (2048, 4096, 8192, 16384)


def evenly_spread(n: int, count: int) -> list[int]:
    return list(range(n)) if count >= n else [round(i * (n - 1) / (count - 1)) for i in range(count)]


def dev_pairs(loaded, src_path: Path, ref_path: Path) -> list[tuple[list[int], list[int]]]:
    sources = src_path.read_text(encoding="utf-8").splitlines()
    references = ref_path.read_text(encoding="utf-8").splitlines()
    eos = loaded.tgt_tokenizer.eos_id
    pairs = zip(loaded.src_tokenizer.encode_batch(sources), loaded.tgt_tokenizer.encode_batch(references))
    return [(src + [eos], tgt + [eos]) for src, tgt in pairs if src and tgt]  # as the training data has them


def batches(pairs: list, max_tokens: int, tokenizer) -> list:
    lengths = np.array([[len(s), len(t)] for s, t in pairs])  # (N, 2)
    sampler = TokenBatchSampler(lengths[:, 0], lengths[:, 1], max_tokens=max_tokens, seed=0, shuffle=False)
    ids = dict(pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id)
    return [collate([pairs[i] for i in indices], **ids) for indices in sampler.batches(0)]


def loss_pass(model, prepared: list, loss_fn, precision: str) -> Callable[[], float]:
    @torch.inference_mode()
    def run() -> float:
        total = 0.0
        for batch in prepared:
            with autocast(precision, CPU):
                total += float(batch_loss(model, batch, loss_fn, pad_id=model.pad_id).loss_sum)
        return total

    return run


def optimizer_steps(model) -> dict[str, Callable[[], None]]:
    """AdamW over build_adamw's parameter groups as torch runs it by default on a CPU (a loop over the
    tensors) and fused (what build_adamw picks where the kernel exists), on gradients of the model's
    shape; each optimizer keeps its own copy of the weights, so neither changes the model."""
    steps = {}
    for name, fused in (("default loop", False), ("fused", True)):
        copy = [torch.nn.Parameter(p.detach().clone()) for p in model.parameters()]
        for parameter in copy:
            parameter.grad = torch.randn_like(parameter) * 1e-3
        groups = [
            {"params": g["params"], "weight_decay": g["weight_decay"]}
            for g in build_adamw(torch.nn.ParameterList(copy), lr=1e-4).param_groups
        ]
        optimizer = torch.optim.AdamW(groups, lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=fused or None)
        steps[name] = optimizer.step
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--dev-src", type=Path, default=Path("data/bible_en_es/dev.en"))
    parser.add_argument("--dev-ref", type=Path, default=Path("data/bible_en_es/dev.es"))
    parser.add_argument("--sentences", type=int, default=500, help="trainer.validate_max_sentences")
    parser.add_argument("--max-tokens", type=int, default=4096, help="trainer.max_tokens of the run")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--minutes", type=float, default=30.0, help="the run's trainer.max_minutes")
    parser.add_argument("--validate-minutes", type=float, default=5.0, help="trainer.validate_every_minutes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="50 dev pairs, 1 repeat: a smoke run")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    threads = set_threads(args.threads)
    print(describe_machine(threads))
    loaded = load_for_inference(args.checkpoint, CPU)
    model, tokenizer = loaded.model, loaded.tgt_tokenizer
    pairs = dev_pairs(loaded, args.dev_src, args.dev_ref)
    if args.quick:
        pairs, args.sentences, args.repeats = pairs[:50], 20, 1
    chosen = [pairs[i] for i in evenly_spread(len(pairs), args.sentences)]
    loss_fn = partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=tokenizer.pad_id)
    precision = args.precision
    print(
        f"model: {args.checkpoint} (update {loaded.step}); {len(pairs)} dev pairs; precision {precision}; "
        f"load {load_average()}"
    )

    # the unit of learning: one training step on a batch of the run's size
    train_batch = max(batches(pairs, args.max_tokens, tokenizer), key=lambda b: b.n_tgt_tokens)

    def training_step() -> None:
        model.train()
        with autocast(precision, CPU):
            out = batch_loss(model, train_batch, loss_fn, pad_id=model.pad_id)
        out.loss_sum.backward()
        model.zero_grad(set_to_none=True)
        model.eval()

    step = time_interleaved({"step": training_step}, warmup=1, repeats=args.repeats)["step"].median
    optimizer = time_interleaved(optimizer_steps(model), warmup=2, repeats=10 * args.repeats)
    budget = args.max_tokens
    whole = loss_pass(model, batches(pairs, budget, tokenizer), loss_fn, precision)
    subset = loss_pass(model, batches(chosen, budget, tokenizer), loss_fn, precision)
    loss = time_interleaved(
        {"whole dev set": whole, f"{len(chosen)} pairs": subset}, warmup=1, repeats=args.repeats
    )
    options = SearchOptions(beam_size=1, max_len_a=1.2, max_len_b=10)
    sources = [src for src, _ in chosen]

    def decode(max_tokens: int) -> Callable[[], object]:
        return lambda: search_ids(
            model,
            sources,
            options=options,
            ids=SpecialIds.of(tokenizer),
            device=CPU,
            max_tokens=max_tokens,
            precision=precision,
        )

    decoding = time_interleaved({b: decode(b) for b in BUDGETS}, warmup=1, repeats=args.repeats)
    with tempfile.TemporaryDirectory() as directory:
        target = Path(directory) / "snapshot.pt"
        snapshot = time_interleaved(
            {
                "snapshot": lambda: save_checkpoint(
                    target, {"model": model.state_dict(), "step": 1, "snapshot": True}
                )
            },
            warmup=1,
            repeats=args.repeats,
        )["snapshot"].median

    seconds = 60 * args.minutes
    validations = max(0, int((args.minutes - 1e-9) // args.validate_minutes))  # in the budget (not the last)
    updates = seconds / step
    rows = [
        ["training step (fwd+loss+bwd)", f"{1000 * step:.0f} ms", f"~{updates:.0f} updates", "-"],
    ]

    def row(label: str, seconds_each: float, count: float) -> list[str]:
        each = f"{1000 * seconds_each:.1f} ms" if seconds_each < 1 else f"{seconds_each:.2f} s"
        return [label, each, f"x {count:.0f}", f"{100 * seconds_each * count / seconds:.2f}%"]

    rows += [row(f"optimizer step, {name}", t.median, updates) for name, t in optimizer.items()]
    rows += [row(f"dev loss, {name}", t.median, validations) for name, t in loss.items()]
    rows += [
        row(f"greedy dev decode, {len(chosen)} sentences, max_tokens {name}", t.median, validations)
        for name, t in decoding.items()
    ]
    rows.append(row("weights-only snapshot", snapshot, updates / 25))
    print(format_table(["part", "each", f"in {args.minutes:g} min", "share of the run"], rows))
    fused = optimizer["default loop"].median / optimizer["fused"].median
    print_headline("AdamW step, default vs fused", "torch's default (for-loop)", f"{fused:.2f}x")
    ratio = decoding[budget].median / decoding[max(BUDGETS)].median
    print_headline(
        f"greedy dev decode, max_tokens {budget} vs {max(BUDGETS)}", f"max_tokens {budget}", f"{ratio:.2f}x"
    )


if __name__ == "__main__":
    main()

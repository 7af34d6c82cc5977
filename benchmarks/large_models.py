#!/usr/bin/env python
"""Memory per rank (and updates/s) of training an NLLB-shaped model: full fine-tuning on 1 rank,
trainer.strategy=ddp and fsdp on 2 ranks, LoRA on 1 rank and LoRA + fsdp on 2.

    python benchmarks/large_models.py              # the largest NLLB-shaped model 2 ddp ranks fit in memory
    python benchmarks/large_models.py --layers 12  # NLLB-200-distilled-600M's shape as it is
    python benchmarks/large_models.py --tiny       # a smoke run (--quick too)

The model: NLLB-200-distilled-600M's sizes (d_model 1024, 16 heads, ffn 4096, 12 + 12 layers, its 256,206
tokens, tied embeddings) as a transformers M2M100Config, read by our importer's config reader
(seq2seq.interop.huggingface_config.model_settings) into build_model, with random weights. Two ddp ranks of
it need about 2 x 20 bytes per parameter (fp32 weights, gradients, DDP's gradient buckets, AdamW's two
moments) plus activations: where that exceeds `--budget-gib` (default 80% of the machine's memory), the
layers are cut (both stacks alike, the widths and vocabulary kept) to the most that fit, and the table
names the shape measured.

Each configuration runs in fresh processes (torch.multiprocessing; gloo on CPUs, NCCL on GPUs), built as
seq2seq-train builds a run (the model, trainer.lora's adapters, the model sharded for fsdp before the
optimizer, DDP around it for ddp, the Trainer with trainer.strategy), then makes `--updates` updates on
one fixed synthetic batch per rank of `--tokens` target tokens. Peak memory per rank: the resident set's
high-water mark during the updates, reset once the run is built (CPU), or torch.cuda.max_memory_allocated
(GPU); updates/s leaves the first update out. Printed: a table, then per rank the ratios of peak memory
and of updates/s: fsdp / ddp (goal <= 0.6 in memory), lora / full fine-tuning on 1 rank (goal <= 0.4),
lora + fsdp / fsdp.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from common import describe_machine, format_table, load_average, mib, print_headline, synthetic_batch

from seq2seq.data.collate import Batch
from seq2seq.interop.huggingface_config import model_settings
from seq2seq.model import build_model
from seq2seq.train import sharding
from seq2seq.train.loop import Trainer, TrainerOptions
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.optim import build_adamw
from seq2seq.train.reporting import Reporter
from seq2seq.train.schedules import ScheduledLR, noam

# NLLB-200-distilled-600M's config.json sizes; pad 0 (NLLB's is 1) because the synthetic batches pad with 0
NLLB_600M = {"vocab_size": 256206, "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
             "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "encoder_attention_heads": 16,
             "decoder_attention_heads": 16, "max_position_embeddings": 1024}  # fmt: skip
TINY = {**NLLB_600M, "vocab_size": 1000, "d_model": 64, "encoder_layers": 2, "decoder_layers": 2,
        "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "encoder_attention_heads": 4,
        "decoder_attention_heads": 4, "max_position_embeddings": 256}  # fmt: skip
SPECIAL = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2,
           "activation_function": "relu", "scale_embedding": True}  # fmt: skip
LORA = {"rank": 8, "alpha": 16}
# (name, ranks, trainer.strategy, trainer.lora)
CONFIGURATIONS = [("full", 1, "ddp", None), ("ddp", 2, "ddp", None), ("fsdp", 2, "fsdp", None),
                  ("lora", 1, "ddp", LORA), ("lora + fsdp", 2, "fsdp", LORA)]  # fmt: skip
# (what, measured, against, goal): the ratios printed, per rank where both sides have one
RATIOS = [("fsdp / ddp", "fsdp", "ddp", 0.6), ("lora / full fine-tuning", "lora", "full", 0.4),
          ("lora + fsdp / fsdp", "lora + fsdp", "fsdp", None)]  # fmt: skip
DDP_BYTES_PER_PARAMETER = 20  # fp32 weight, gradient, DDP bucket, AdamW exp_avg and exp_avg_sq
RANK_OVERHEAD = 2 * 2**30  # a rank's interpreter and libraries, activations, allocator slack


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", "--quick", action="store_true", help="a tiny M2M100 shape: a smoke run")
    parser.add_argument("--layers", type=int, default=None, help="encoder and decoder layers (default: fit)")
    parser.add_argument(
        "--budget-gib", type=float, default=None, help="memory for 2 ddp ranks (default 80%%)"
    )
    parser.add_argument("--updates", type=int, default=4, help="updates per configuration (first untimed)")
    parser.add_argument("--tokens", type=int, default=1024, help="target tokens per rank and update")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="threads per rank (default: cores / ranks)")
    parser.add_argument("--only", default=None, help="configurations to run, comma-separated (default: all)")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of Markdown")
    return parser.parse_args(argv)


def settings_for(layers: int | None, *, tiny: bool) -> dict[str, Any]:
    """build_model's arguments, through the importer, for the NLLB shape with `layers` per stack."""
    sizes = dict(TINY if tiny else NLLB_600M)
    if layers is not None:
        sizes.update(encoder_layers=layers, decoder_layers=layers)
    from transformers import M2M100Config

    config = M2M100Config(**sizes, **SPECIAL).to_dict()
    config["architectures"] = ["M2M100ForConditionalGeneration"]
    return model_settings(config)


def parameter_count(settings: dict[str, Any]) -> int:
    with torch.device("meta"):
        model = build_model(**settings)
    return sum(p.numel() for p in model.parameters())


def machine_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def chosen_shape(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The settings measured and their name: --layers, or the most layers whose 2 ddp ranks fit."""
    if args.tiny or args.layers is not None:
        settings = settings_for(args.layers, tiny=args.tiny)
        return settings, _name(settings, tiny=args.tiny)
    budget = (args.budget_gib * 2**30) if args.budget_gib else 0.8 * machine_memory()
    for layers in range(NLLB_600M["encoder_layers"], 0, -1):
        settings = settings_for(layers, tiny=False)
        if 2 * (DDP_BYTES_PER_PARAMETER * parameter_count(settings) + RANK_OVERHEAD) <= budget:
            return settings, _name(settings, tiny=False)
    raise SystemExit(f"not even one layer of the NLLB shape fits {budget / 2**30:.1f} GiB for 2 ddp ranks")


def _name(settings: dict[str, Any], *, tiny: bool) -> str:
    layers = settings["encoder_layers"]
    millions = parameter_count(settings) / 1e6
    if tiny:
        return f"tiny M2M100 shape ({layers}+{layers} layers, {millions:.1f}M parameters)"
    full = layers == NLLB_600M["encoder_layers"]
    return (f"NLLB-200-distilled-600M shape{'' if full else f' cut to {layers}+{layers} layers'} "
            f"({millions:.0f}M parameters)")  # fmt: skip


def build_trainer(settings: dict[str, Any], strategy: str, lora: dict | None, device: torch.device,
                  precision: str, out_dir: Path) -> Trainer:  # fmt: skip
    """The run as seq2seq-train builds it: adapters, then fsdp's shards or DDP, then the Trainer."""
    torch.manual_seed(0)
    model = build_model(**settings).to(device)
    if lora is not None:
        from seq2seq.train.lora import add_adapters

        add_adapters(model, lora)
    if strategy == sharding.FSDP:
        model = sharding.fsdp_model(model, device, precision)
    optimizer = build_adamw(model, lr=1e-4)
    wrapped = model
    if strategy == sharding.DDP and dist.is_initialized():
        device_ids = [device.index] if device.type == "cuda" else None
        wrapped = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    options = TrainerOptions(strategy=strategy, precision=precision, lora=lora, validate_every_minutes=None,
                             save_every=None, log_every=10**9)  # fmt: skip
    return Trainer(
        model=wrapped, optimizer=optimizer,
        scheduler=ScheduledLR(optimizer, partial(noam, d_model=settings["d_model"], warmup=4)),
        loss_fn=partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=settings["pad_id"]), batches=None,
        make_batch=None, validate=None, reporter=Reporter(log_dir=None, progress_bar=False, enabled=False),
        output_dir=out_dir, checkpoint_extras={}, options=options, device=device,
    )  # fmt: skip


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return
    try:  # memory freed while building (the whole model before fsdp shards it) goes back to the system
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the resident set's high-water mark := its current size


def _peak(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return kib * 1024


def _rank(rank: int, world: int, job: dict[str, Any]) -> None:
    os.environ.update(WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank))
    torch.set_num_threads(job["threads"])
    device = torch.device("cuda", rank) if job["device"] == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world > 1:
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(
            backend, store=dist.FileStore(job["store"], world), rank=rank, world_size=world
        )
    trainer = build_trainer(job["settings"], job["strategy"], job["lora"], device, job["precision"],
                            Path(job["out_dir"]))  # fmt: skip
    sample = synthetic_batch(job["tokens"], vocab_size=job["settings"]["src_vocab_size"], seed=rank)
    batch = Batch(
        src=sample.src, tgt_in=sample.tgt_in, tgt_out=sample.tgt_out, n_tgt_tokens=sample.target_tokens
    )
    _reset_peak(device)
    seconds = []
    for _ in range(job["updates"]):
        start = time.perf_counter()
        trainer._update([batch])
        seconds.append(time.perf_counter() - start)
    result = {"rank": rank, "peak": _peak(device), "seconds": statistics.median(seconds[1:] or seconds)}
    Path(job["out_dir"], f"rank{rank}.json").write_text(json.dumps(result))
    if world > 1:
        dist.barrier()  # every rank's collectives done before the group goes
        dist.destroy_process_group()


def measure(name: str, ranks: int, strategy: str, lora: dict | None, settings: dict, args: argparse.Namespace
            ) -> list[dict[str, Any]]:  # fmt: skip
    """One configuration in `ranks` fresh processes: each rank's peak memory and seconds per update."""
    with tempfile.TemporaryDirectory(prefix="large_models_") as out_dir:
        threads = args.threads or max(1, (os.cpu_count() or 2) // ranks)
        job = {"settings": settings, "strategy": strategy, "lora": lora, "device": args.device,
               "threads": threads, "precision": args.precision, "tokens": args.tokens,
               "updates": args.updates, "out_dir": out_dir,
               "store": str(Path(out_dir) / "store")}  # fmt: skip
        mp.spawn(_rank, args=(ranks, job), nprocs=ranks, join=True)
        return [json.loads(Path(out_dir, f"rank{rank}.json").read_text()) for rank in range(ranks)]


def ratio_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per rank, `measured` against `against`: peak memory and updates/s (a 1-rank side pairs with rank 0)."""
    lines = []
    for what, measured, against, goal in RATIOS:
        if measured not in results or against not in results:
            continue
        pairs = [(m, results[against][min(i, len(results[against]) - 1)])
                 for i, m in enumerate(results[measured])]  # fmt: skip
        memory = ", ".join(f"{m['peak'] / a['peak']:.2f}" for m, a in pairs)
        speed = ", ".join(f"{a['seconds'] / m['seconds']:.2f}" for m, a in pairs)
        target = f" (goal <= {goal})" if goal is not None else ""
        lines.append(f"{what}: peak memory per rank {memory}{target}; updates/s {speed}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings, shape = chosen_shape(args)
    print(describe_machine(args.threads or max(1, (os.cpu_count() or 2) // 2)))
    print(f"model: {shape}; {args.tokens} target tokens per rank and update, {args.updates} updates, "
          f"{args.precision} on {args.device}")  # fmt: skip
    chosen = CONFIGURATIONS
    if args.only:
        names = [name.strip() for name in args.only.split(",")]
        unknown = sorted(set(names) - {c[0] for c in CONFIGURATIONS})
        if unknown:
            raise SystemExit(f"--only: no configuration {', '.join(unknown)}; choose among "
                             + ", ".join(c[0] for c in CONFIGURATIONS))  # fmt: skip
        chosen = [c for c in CONFIGURATIONS if c[0] in names]
    results, rows = {}, []
    for name, ranks, strategy, lora in chosen:
        results[name] = measure(name, ranks, strategy, lora, settings, args)
        for rank in results[name]:
            rows.append(
                [name, ranks, rank["rank"], mib(rank["peak"]), f"{1 / rank['seconds']:.3f}", load_average()]
            )
    print(
        format_table(["configuration", "ranks", "rank", "peak MiB", "updates/s", "load"], rows, csv=args.csv)
    )
    print("\n".join(ratio_lines(results)))
    if "fsdp" in results and "ddp" in results:
        worst = max(f["peak"] / d["peak"] for f, d in zip(results["fsdp"], results["ddp"]))
        print_headline(f"peak memory per rank, fsdp vs ddp, 2 ranks ({shape})", "ddp", f"{worst:.2f}x",
                       "<= 0.6x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

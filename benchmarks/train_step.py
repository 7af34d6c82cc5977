#!/usr/bin/env python
"""Training-step throughput: seq2seq vs Hugging Face MarianMTModel vs torch.nn.Transformer.

    python benchmarks/train_step.py                 # size small, ~4,000 target tokens, fp32 and bf16
    python benchmarks/train_step.py --size base --tokens 8000 --steps 7
    python benchmarks/train_step.py --quick         # a smoke run of a few seconds

One step = forward + label-smoothed cross-entropy (epsilon 0.1) + backward + AdamW. The peers'
logits go through PyTorch's F.cross_entropy(label_smoothing=0.1), which is faster here than our
logits-level seq2seq.train.loss.label_smoothed_nll and gives the same values; ours runs our
trainer's objective, which fuses the output projection into the loss (same values and gradients,
tested). All three models get the same batch, sizes, tied embeddings, sinusoidal positions, dropout
0.1 on residuals (none on attention weights or the FFN activation) and relu FFNs.
Throughput is real (non-pad) target tokens per second, the median of interleaved repetitions after
warm-up. Our step's achieved GFLOP/s is printed next to a matmul peak measured in the same run.
"""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from common import (
    CPU,
    PAD,
    Batch,
    Timing,
    describe_machine,
    format_table,
    load_average,
    marian_model,
    matmul_peak,
    print_headline,
    set_threads,
    synthetic_batch,
    time_interleaved,
    training_parser,
)
from torch import Tensor, nn

from seq2seq.model import build_model, count_parameters, model_size
from seq2seq.model.sizes import SIZE_KEYS
from seq2seq.nn.packing import Packing
from seq2seq.nn.positional import sinusoid_table
from seq2seq.precision import autocast
from seq2seq.train.loss import LossOutput, projected_label_smoothed_nll
from seq2seq.train.objective import batch_loss

DROPOUT = 0.1  # residual / embedding dropout, as in our builder's default
EPSILON = 0.1  # label smoothing
VOCAB = 8000


@dataclass(frozen=True)
class Dims:
    d_model: int
    n_heads: int
    ffn_dim: int
    encoder_layers: int
    decoder_layers: int
    vocab: int

    @property
    def sizes(self) -> dict[str, int]:
        """The model_size part: d_model, n_heads, ffn_dim, encoder_layers, decoder_layers."""
        return {key: getattr(self, key) for key in SIZE_KEYS}


# ----------------------------------------------------------------------------- the three models


def build_ours(dims: Dims) -> nn.Module:
    return build_model(
        src_vocab_size=dims.vocab, tgt_vocab_size=dims.vocab, pad_id=PAD, **dims.sizes, dropout=DROPOUT,
        attention_dropout=0.0, activation_dropout=0.0, activation="relu", norm="pre",
    )  # fmt: skip


def build_marian(dims: Dims, attention: str) -> nn.Module:
    """MarianMTModel at random init. Marian is post-norm by design (no pre-norm option)."""
    return marian_model(
        dims.sizes, dims.vocab, attention=attention, dropout=DROPOUT, tie_word_embeddings=True,
        max_position_embeddings=1024, pad_token_id=PAD, decoder_start_token_id=PAD, eos_token_id=2,
        forced_eos_token_id=None, use_cache=False,
    )  # fmt: skip


class TorchTransformer(nn.Module):
    """torch.nn.Transformer plus what makes it our model: scaled tied embedding, sinusoids, output."""

    def __init__(self, dims: Dims) -> None:
        super().__init__()
        self.embedding = nn.Embedding(dims.vocab, dims.d_model, padding_idx=PAD)
        nn.init.normal_(self.embedding.weight, std=dims.d_model**-0.5)
        self.scale = math.sqrt(dims.d_model)
        self.dropout = nn.Dropout(DROPOUT)
        self.core = nn.Transformer(
            dims.d_model,
            dims.n_heads,
            dims.encoder_layers,
            dims.decoder_layers,
            dims.ffn_dim,
            dropout=DROPOUT,
            activation="relu",
            batch_first=True,
            norm_first=True,
        )
        # nn.Transformer uses one dropout everywhere; ours drops no attention weights or FFN activations.
        for layer in [*self.core.encoder.layers, *self.core.decoder.layers]:
            layer.self_attn.dropout = 0.0
            layer.dropout.p = 0.0
            if hasattr(layer, "multihead_attn"):
                layer.multihead_attn.dropout = 0.0

    def _embed(self, tokens: Tensor) -> Tensor:
        positions = sinusoid_table(torch.arange(tokens.shape[1]), self.embedding.embedding_dim)  # (T, D)
        return self.dropout(self.embedding(tokens) * self.scale + positions)  # (B, T, D)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Shapes: src (B, S), tgt_in (B, T) -> (B, T, V)."""
        src_pad = src == PAD  # (B, S) True = ignore
        length = tgt_in.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool).triu(1)  # (T, T) True = ignore
        hidden = self.core(
            self._embed(src),
            self._embed(tgt_in),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=src_pad,
            memory_key_padding_mask=src_pad,
        )
        return F.linear(hidden, self.embedding.weight)


def torch_loss(logits: Tensor, labels: Tensor) -> LossOutput:
    """The peers' loss: PyTorch's label-smoothed cross-entropy, summed over non-pad labels."""
    flat_logits, flat_labels = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)  # (B*T, V), (B*T,)
    loss_sum = F.cross_entropy(
        flat_logits.float(), flat_labels, ignore_index=PAD, reduction="sum", label_smoothing=EPSILON
    )
    return LossOutput(loss_sum=loss_sum, nll_sum=loss_sum.detach(), n_tokens=(flat_labels != PAD).sum())


def loss_function(name: str, model: nn.Module) -> Callable[[Batch], LossOutput]:
    """Each model's usual training forward and loss on a batch.

    Marian and nn.Transformer project every position to (B, T, V) logits and the loss ignores the
    padded labels. Ours runs our trainer's objective (seq2seq.train.objective.batch_loss): decoder
    states at the real target positions only, projected and reduced block by block by
    projected_label_smoothed_nll (equal to label-smoothed cross-entropy of the full logits, tested).
    """
    if name == "ours":
        fused_loss = partial(projected_label_smoothed_nll, epsilon=EPSILON, pad_id=PAD)
        return lambda b: batch_loss(model, b, fused_loss, pad_id=PAD)
    if name == "marian":

        def marian_logits(b: Batch) -> Tensor:
            mask = (b.src != PAD).long()
            return model(
                input_ids=b.src, attention_mask=mask, decoder_input_ids=b.tgt_in, use_cache=False
            ).logits

        return lambda b: torch_loss(marian_logits(b), b.tgt_out)
    return lambda b: torch_loss(model(b.src, b.tgt_in), b.tgt_out)


def train_step(model: nn.Module, loss_of: Callable[[Batch], LossOutput], batch: Batch, bf16: bool):
    """A closure running one full training step on `batch` (same optimizer settings for every model)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01)
    precision = "bf16" if bf16 else "fp32"
    model.train()

    def step() -> None:
        with autocast(precision, CPU):
            loss_sum, _, n_tokens = loss_of(batch)
        (loss_sum / n_tokens).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


# ----------------------------------------------------------------------------- FLOPs


def step_flops(dims: Dims, batch: Batch) -> float:
    """Matmul FLOPs of one training step of our model on the padded batch (what is executed).

    Per position, forward FLOPs are 2 x the matmul weights it passes through:
        encoder, per source position:  L_e (4 D^2 + 2 D F)   [qkv 3D^2, out D^2, ffn 2DF]
        decoder, per source position:  L_d 2 D^2             [cross-attention K/V of the memory]
    "Source position" means real source token where the encoder packs the batch (seq2seq.nn.packing:
    on CPU, at least 5% padding), else every padded position.
        decoder, per target position:  L_d (6 D^2 + 2 D F)   [self 4D^2, cross q+out 2D^2, ffn]
        logits, per real target token:  D V                   [ours skips padded positions]
    Attention scores and their weighted sum, forward, full (B, H, Tq, Tk) matrices:
        4 D B (L_e S^2 + L_d T^2 + L_d T S)
    Backward costs twice the forward, so the step is 3 x forward:
        6 (B S (L_e (4D^2 + 2DF) + 2 L_d D^2) + B T L_d (6D^2 + 2DF) + N D V),  N real target tokens
          + 12 D B (L_e S^2 + L_d T^2 + L_d T S)
    Embedding lookups, norms, softmax, the loss and the optimizer are not counted.
    """
    d, f, le, ld, v = dims.d_model, dims.ffn_dim, dims.encoder_layers, dims.decoder_layers, dims.vocab
    b, s = batch.src.shape
    t = batch.tgt_in.shape[1]
    packing = Packing.of(batch.src != PAD)
    source_positions = b * s if packing is None else packing.rows.numel()
    source_weights = le * (4 * d * d + 2 * d * f) + ld * 2 * d * d
    target_weights = ld * (6 * d * d + 2 * d * f)
    logits = batch.target_tokens * d * v
    attention = 4 * d * b * (le * s * s + ld * t * t + ld * t * s)
    return 6 * (source_positions * source_weights + b * t * target_weights + logits) + 3 * attention


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = training_parser(
        __doc__.splitlines()[0], size="small", tokens=(4096, "real target tokens per batch"),
        steps=(5, "timed steps per model and dtype (median)"),
        quick="1,024 tokens, 1 warm-up and 2 timed steps",
    )  # fmt: skip
    parser.add_argument("--mean-length", type=float, default=32.0, help="mean target sentence length")
    parser.add_argument(
        "--length-sorted",
        action="store_true",
        help="a batch as token-budget batching makes it (similar lengths, little padding)",
    )
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--dtypes", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    parser.add_argument("--marian-attention", default="sdpa", choices=["sdpa", "eager"])
    args = parser.parse_args(argv)
    if args.quick:
        args.tokens, args.warmup, args.steps = 1024, 1, 2
    return args


def measure(args: argparse.Namespace, dims: Dims, batch: Batch) -> dict[tuple[str, str], Timing]:
    """Timed steps for every (model, dtype)."""
    torch.manual_seed(0)
    models = {
        "ours": build_ours(dims),
        "marian": build_marian(dims, args.marian_attention),
        "nn.Transformer": TorchTransformer(dims),
    }
    params = {name: count_parameters(m) for name, m in models.items()}
    print("trainable parameters: " + ", ".join(f"{n} {p:,}" for n, p in params.items()))
    marian_attention = models["marian"].config._attn_implementation
    print(f"Marian attention implementation: {marian_attention}; Marian is post-norm, the others pre-norm")
    results = {}
    for dtype in args.dtypes:
        steps = {
            name: train_step(model, loss_function(name, model), batch, bf16=dtype == "bf16")
            for name, model in models.items()
        }
        timings = time_interleaved(steps, warmup=args.warmup, repeats=args.steps)
        for name, timing in timings.items():
            results[(name, dtype)] = timing
            print(
                f"  {dtype} {name:15s} median {timing.median * 1e3:8.1f} ms  "
                f"best {timing.best * 1e3:8.1f} ms  spread {timing.spread:5.1%}  load {load_average()}",
                flush=True,
            )
    return results


def report(args: argparse.Namespace, dims: Dims, batch: Batch, timings: dict, peaks: dict) -> None:
    """Tables from the medians (the headline) and, beside them, the best repetitions."""
    tokens = batch.target_tokens
    names = ["ours", "marian", "nn.Transformer"]
    seconds = {key: timing.median for key, timing in timings.items()}
    best = {key: timing.best for key, timing in timings.items()}
    rows = []
    for dtype in args.dtypes:
        for name in names:
            s, b = seconds[(name, dtype)], best[(name, dtype)]
            rows.append([name, dtype, f"{s * 1e3:.0f}", f"{b * 1e3:.0f}", f"{tokens / s:,.0f}"])
    headers = ["model", "dtype", "ms/step (median)", "ms/step (best)", "target tokens/s (median)"]
    print("\n" + format_table(headers, rows, csv=args.csv))
    ratio_rows = []
    for dtype in args.dtypes:
        ours, ours_best = seconds[("ours", dtype)], best[("ours", dtype)]
        ratio_rows.append(
            [
                dtype,
                f"{seconds[('marian', dtype)] / ours:.2f}x",
                f"{seconds[('nn.Transformer', dtype)] / ours:.2f}x",
                f"{best[('marian', dtype)] / ours_best:.2f}x",
            ]
        )
    ratio_headers = ["dtype", "ours/Marian", "ours/nn.Transformer", "ours/Marian (best vs best)"]
    print("\n" + format_table(ratio_headers, ratio_rows, csv=args.csv))
    shape = "length-sorted" if args.length_sorted else "random lengths"
    what = (
        f"training step tokens/s, {args.size}, {tokens:,} target tokens, "
        f"{shape} ({batch.padding_share():.0%} padding)"
    )
    for dtype, to_marian, to_torch, _ in ratio_rows:
        print_headline(f"{what}, {dtype}", "MarianMTModel", to_marian, ">= 1.3x")
        print_headline(f"{what}, {dtype}", "torch.nn.Transformer", to_torch)
    flops = step_flops(dims, batch)
    flop_rows = []
    for dtype in args.dtypes:
        achieved = flops / seconds[("ours", dtype)] / 1e9
        flop_rows.append(
            [
                dtype,
                f"{flops / 1e9:.0f}",
                f"{achieved:.0f}",
                f"{peaks[dtype]:.0f}",
                f"{achieved / peaks[dtype]:.0%}",
            ]
        )
    print(
        "\n"
        + format_table(
            ["dtype", "GFLOP/step (ours)", "achieved GFLOP/s", "matmul peak GFLOP/s", "share of peak"],
            flop_rows,
            csv=args.csv,
        )
    )
    print(f"\nload average at the end: {load_average()}")


def main(argv: list[str] | None = None) -> int:
    logging.getLogger("transformers").setLevel(logging.ERROR)
    args = parse_args(argv)
    threads = set_threads(args.threads)
    dims = Dims(**model_size(args.size), vocab=VOCAB)
    batch = synthetic_batch(
        args.tokens, vocab_size=VOCAB, mean_length=args.mean_length, length_sorted=args.length_sorted
    )
    print(describe_machine(threads))
    print(
        f"size {args.size} ({dims}); batch {batch.src.shape[0]} sentences, src {tuple(batch.src.shape)}, "
        f"tgt {tuple(batch.tgt_in.shape)}, {batch.target_tokens:,} target tokens, "
        f"{batch.padding_share():.0%} padding; {args.warmup} warm-up + {args.steps} timed steps"
    )
    dtype_of = {"fp32": torch.float32, "bf16": torch.bfloat16}
    peaks = {dtype: matmul_peak(dtype_of[dtype]) for dtype in args.dtypes}
    print("matmul 2048^3 peak: " + ", ".join(f"{d} {p:.0f} GFLOP/s" for d, p in peaks.items()))
    timings = measure(args, dims, batch)
    report(args, dims, batch, timings, peaks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

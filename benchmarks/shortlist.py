#!/usr/bin/env python
"""Vocabulary shortlists: our search with and without one, and the cost of confidence under one.

    python benchmarks/shortlist.py                  # vocabulary 8,000 and 32,000; batches of 8 and 64
    python benchmarks/shortlist.py --quick          # vocabulary 8,000, batch 8, best of 2
    python benchmarks/shortlist.py --quantization int8

A shortlist computes each batch's output projection for the union of its sentences' candidates and
searches each sentence over its own (seq2seq.decode.shortlist); with confidence, the translations are
then scored again over the whole vocabulary. Three candidates per row, through the same TorchEngine:
"full" (no shortlist), "shortlist", and "shortlist + confidence". The models are randomly initialised
(`small` sizes, tied embeddings), and so is the shortlist (`per_source` random candidates per source
token plus `frequent` tokens, seq2seq-shortlist's defaults), so the union grows with the batch as a
real one does. A random model does not know when to stop, so every sentence runs exactly L decoder
steps (min_len = max_len = L - 1, plus eos), L = the batch's mean source length (log-normal around
30 tokens). Candidates alternate round by round (common.time_interleaved).

The script uses only interfaces older than per-sentence candidates (TorchEngine, Shortlist), so it
also runs on a checkout from before them: run it on both, on the same quiet machine, to compare.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    CPU,
    describe_machine,
    format_table,
    load_average,
    sentence_lengths,
    set_threads,
    time_interleaved,
)

from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.shortlist import Shortlist
from seq2seq.inference.engines import TorchEngine
from seq2seq.model import build_model, model_size
from seq2seq.nn.quantized import quantize_int8

PAD, UNK, BOS, EOS, FIRST_WORD = 0, 1, 2, 3, 4
IDS = SpecialIds(bos=BOS, eos=EOS, pad=PAD)


def random_shortlist(vocab: int, *, per_source: int, frequent: int, seed: int) -> Shortlist:
    generator = torch.Generator().manual_seed(seed)
    table = torch.randint(FIRST_WORD, vocab, (vocab, per_source), generator=generator, dtype=torch.int32)
    common = torch.randperm(vocab - FIRST_WORD, generator=generator)[:frequent].int() + FIRST_WORD
    always = torch.tensor([UNK, EOS], dtype=torch.int32)
    return Shortlist(table, common, always, vocab, ("random", "random"))


def random_sources(batch: int, vocab: int, *, seed: int) -> list[list[int]]:
    """`batch` sources of log-normal lengths around 30 tokens, eos last."""
    generator = torch.Generator().manual_seed(seed)
    lengths = sentence_lengths(batch, 30.0, generator=generator).tolist()
    words = [torch.randint(FIRST_WORD, vocab, (n - 1,), generator=generator).tolist() for n in lengths]
    return [[*w, EOS] for w in words]


def candidates(
    model: torch.nn.Module, sources: list[list[int]], shortlist: Shortlist, options: SearchOptions
) -> dict[str, Callable[[], object]]:
    full = TorchEngine(model, IDS, device=CPU, precision="fp32")
    short = TorchEngine(model, IDS, device=CPU, precision="fp32", shortlist=shortlist)
    return {
        "full": lambda: full.search(sources, options, max_tokens=1 << 20),
        "shortlist": lambda: short.search(sources, options, max_tokens=1 << 20),
        "shortlist + confidence": lambda: short.search(sources, options, max_tokens=1 << 20, confidence=True),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vocab", type=int, nargs="+", default=[8000, 32000])
    parser.add_argument("--batch", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5], help="1 = greedy")
    parser.add_argument("--per-source", type=int, default=50)
    parser.add_argument("--frequent", type=int, default=1000)
    parser.add_argument("--quantization", choices=["none", "int8"], default="none")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per candidate (best is reported)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    parser.add_argument("--quick", action="store_true", help="vocabulary 8,000, batch 8, 2 repeats")
    parser.add_argument("--csv", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.vocab, args.batch, args.repeats = [8000], [8], 2
    threads = set_threads(args.threads)
    print(describe_machine(threads))
    sizes = f"{args.per_source} per source token, {args.frequent} frequent"
    print(f"quantization {args.quantization}; shortlist: {sizes}")
    rows = []
    for vocab in args.vocab:
        torch.manual_seed(0)
        model = build_model(
            src_vocab_size=vocab, tgt_vocab_size=vocab, pad_id=PAD, dropout=0.0, **model_size("small")
        )
        model = quantize_int8(model.eval()) if args.quantization == "int8" else model.eval()
        shortlist = random_shortlist(vocab, per_source=args.per_source, frequent=args.frequent, seed=1)
        for batch in args.batch:
            sources = random_sources(batch, vocab, seed=2)
            steps = round(sum(len(s) for s in sources) / batch)
            longest = max(len(source) for source in sources)
            padded = torch.tensor([source + [PAD] * (longest - len(source)) for source in sources])  # (B, S)
            union = len(shortlist.candidates(padded))  # the candidates the projection computes
            for beams in args.beams:
                options = SearchOptions(
                    beam_size=beams, nbest=1, min_len=steps - 1, max_len_a=0.0, max_len_b=steps - 1
                )
                timings = time_interleaved(candidates(model, sources, shortlist, options), warmup=1,
                                           repeats=args.repeats)  # fmt: skip
                full = timings["full"].best
                for name, timing in timings.items():
                    rows.append([
                        vocab, batch, union, "greedy" if beams == 1 else f"beam {beams}", name,
                        f"{timing.best:.2f}", f"{batch / timing.best:.1f}", f"{full / timing.best:.2f}x",
                        f"{timing.spread:.0%}",
                    ])  # fmt: skip
    header = ["vocab", "batch", "union", "search", "candidate", "best s", "sentences/s", "vs full", "spread"]
    print(format_table(header, rows, csv=args.csv))
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Decoding speed: our greedy and beam search against Hugging Face `MarianMTModel.generate()`.

    python benchmarks/decode.py            # batch 64, greedy and beam 5, best of 5 (~35 s on 2 idle cores)
    python benchmarks/decode.py --quick    # batch 16, best of 2
    python benchmarks/decode.py --profile  # also: where our beam step spends its time

Both models are randomly initialised with the same sizes (d_model 256, 4 heads, FFN 1024, 3 + 3
layers, ReLU, vocabulary 8000, shared embeddings). A random model does not know when to stop, so
both sides are made to run exactly L decoder steps per sentence (HF: min_new_tokens =
max_new_tokens = L; ours: min_len = max_len = L - 1 plus the forced eos), L = the batch's mean
source length. That compares the cost per step and leaves out what early stopping and dropping
finished sentences save on real models. Source lengths follow the Bible test set's when
`--lengths-from` names it (words x 1.25 for subwords, + eos), else a log-normal around 30 tokens.
Both run under `torch.inference_mode()` with the same thread count; candidates alternate round by
round (common.time_interleaved) so drifting load on a shared machine hits them alike.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    CPU,
    describe_machine,
    format_table,
    load_average,
    marian_model,
    print_headline,
    sentence_lengths,
    set_threads,
    time_interleaved,
)

from seq2seq.decode import SearchOptions, beam_search, greedy_search
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.model import build_model, model_size
from seq2seq.precision import autocast

PAD, BOS, EOS, FIRST_WORD = 0, 2, 3, 4
VOCAB = 8000
SIZES = model_size("small")
BIBLE_TEST = Path("data/bible_en_es/test.en")
log = logging.getLogger("benchmarks.decode")


def source_lengths(batch: int, lengths_from: Path | None, *, seed: int) -> Tensor:
    """Token lengths (eos included) of `batch` sources. Shapes: -> (B,)."""
    generator = torch.Generator().manual_seed(seed)
    if lengths_from is not None and lengths_from.is_file():
        words = [len(line.split()) for line in lengths_from.read_text(encoding="utf-8").splitlines()]
        pick = torch.randint(len(words), (batch,), generator=generator)
        return torch.tensor([max(2, round(words[i] * 1.25) + 1) for i in pick.tolist()])
    return sentence_lengths(batch, 30.0, generator=generator)


def random_sources(lengths: Tensor, *, seed: int) -> Tensor:
    """Random words, eos last, right-padded. Shapes: lengths (B,) -> (B, max length)."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(FIRST_WORD, VOCAB, (lengths.numel(), int(lengths.max())), generator=generator)
    src[torch.arange(src.shape[1])[None, :] >= lengths[:, None]] = PAD
    src[torch.arange(lengths.numel()), lengths - 1] = EOS
    return src


def small_marian() -> torch.nn.Module:
    """MarianMTModel of our `small` size at random init, for generate()."""
    torch.manual_seed(0)
    return marian_model(
        SIZES, VOCAB, dropout=0.0, max_position_embeddings=512, pad_token_id=PAD, eos_token_id=EOS,
        bos_token_id=BOS, decoder_start_token_id=BOS, forced_eos_token_id=EOS,
    ).eval()  # fmt: skip


def candidates(
    src: Tensor, steps: int, beams: int, precision: str = "fp32"
) -> dict[str, Callable[[], object]]:
    """The two decoders, each running `steps` decoder steps per sentence with `beams` beams.

    precision "bf16" runs both under the same autocast context (seq2seq.precision.autocast, what
    `seq2seq-translate precision=bf16` uses); "fp32" runs both in float32.
    """
    torch.manual_seed(0)
    ours = build_model(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=PAD, dropout=0.0, **SIZES).eval()
    marian = small_marian()
    mask = src != PAD
    options = SearchOptions(beam_size=beams, min_len=steps - 1, max_len_a=0.0, max_len_b=steps - 1)
    ids = SpecialIds(bos=BOS, eos=EOS, pad=PAD)

    def run_ours() -> object:
        with torch.inference_mode(), autocast(precision, CPU):
            if beams == 1:
                return greedy_search(ours, src, options, ids=ids)
            return beam_search(ours, src, options, ids=ids)

    def run_marian() -> object:
        with torch.inference_mode(), autocast(precision, CPU):
            return marian.generate(
                input_ids=src, attention_mask=mask, num_beams=beams, do_sample=False, min_new_tokens=steps,
                max_new_tokens=steps, length_penalty=1.0, early_stopping=False,
            )  # fmt: skip

    return {"ours": run_ours, "marian": run_marian}


def check_lengths(src: Tensor, steps: int, beams: int) -> None:
    """Both sides really produce `steps` tokens per sentence (eos included)."""
    runs = candidates(src[:2], steps, beams)
    ours = runs["ours"]()
    ours_tokens = [len((h if beams == 1 else h[0]).tokens) + 1 for h in ours]  # type: ignore[union-attr]
    marian_tokens = runs["marian"]().shape[1] - 1  # type: ignore[union-attr]  # minus the start token
    assert ours_tokens == [steps, steps] and marian_tokens == steps, (ours_tokens, marian_tokens)


def profile_beam(src: Tensor, steps: int) -> None:
    """Top operators of one beam-5 run of ours (self CPU time)."""
    from torch.profiler import ProfilerActivity, profile

    run = candidates(src, steps, 5)["ours"]
    run()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5], help="1 = greedy")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per candidate (best is reported)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    parser.add_argument("--lengths-from", type=Path, default=BIBLE_TEST, help="source text for lengths")
    parser.add_argument("--quick", action="store_true", help="batch 16, 2 repeats")
    parser.add_argument(
        "--precision", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"], help="both sides alike"
    )
    parser.add_argument("--profile", action="store_true", help="profile our beam-5 run too")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.repeats = 16, 2
    threads = set_threads(args.threads)
    lengths = source_lengths(args.batch, args.lengths_from, seed=0)
    src = random_sources(lengths, seed=1)
    steps = round(float(lengths.float().mean()))
    origin = "Bible test set" if args.lengths_from and args.lengths_from.is_file() else "log-normal, mean 30"
    print(describe_machine(threads))
    print(
        f"batch {args.batch}, source lengths {int(lengths.min())}-{int(lengths.max())} ({origin}), "
        f"{steps} decoder steps per sentence on both sides"
    )
    rows = []
    for precision in args.precision:
        for beams in args.beams:
            check_lengths(src, steps, beams)
            runs = candidates(src, steps, beams, precision)
            timings = time_interleaved(runs, warmup=1, repeats=args.repeats)
            ours, marian = timings["ours"].best, timings["marian"].best
            for name, seconds in (("ours", ours), ("marian", marian)):
                rows.append(
                    [
                        "greedy" if beams == 1 else f"beam {beams}",
                        precision,
                        name,
                        f"{seconds:.2f}",
                        f"{args.batch / seconds:.1f}",
                        f"{args.batch * steps / seconds:.0f}",
                        f"{marian / ours:.2f}x" if name == "ours" else "",
                        f"{timings[name].spread:.0%}",
                    ]
                )
    header = ["search", "precision", "decoder", "best s", "sentences/s", "tokens/s", "speed-up", "spread"]
    print(format_table(header, rows))
    for row in rows[::2]:
        target = ">= 2x" if row[0] == "beam 5" else ""
        print_headline(
            f"decoding sentences/s, {row[0]}, {row[1]}, batch {args.batch}",
            "MarianMTModel.generate",
            row[6],
            target,
        )
    print(f"load average at the end: {load_average()}")
    if args.profile:
        profile_beam(src, steps)


if __name__ == "__main__":
    main()

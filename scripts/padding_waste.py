#!/usr/bin/env python
"""Measure how much of each token-budget batch is padding, on a prepared corpus's training split.

    seq2seq-prepare data=bible_en_es              # once
    python scripts/padding_waste.py                # Bible en->es at max_tokens 2048, 4096, 8192
    python scripts/padding_waste.py --data-dir /corpora/wmt14 --src de --tgt en --max-tokens 4096

Tokenizes with the same sentencepiece settings as training (cached, so a second call is fast)
and prints one line per budget: batches per epoch, sentences per batch, and the padding share.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from seq2seq.data.batching import TokenBatchSampler, padding_waste
from seq2seq.data.pipeline import prepare_training_data
from seq2seq.data.vocabulary import TokenizerSettings
from seq2seq.errors import UserError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data/bible_en_es"))
    parser.add_argument("--src", default="en", help="source language suffix of the files")
    parser.add_argument("--tgt", default="es", help="target language suffix of the files")
    parser.add_argument("--max-tokens", type=int, nargs="+", default=[2048, 4096, 8192])
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--model-type", default="unigram")
    parser.add_argument("--epochs", type=int, default=3, help="average over this many epochs' batches")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the tokenizer is saved (default: DATA_DIR/padding_waste)")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    data_dir = args.data_dir
    try:
        data = prepare_training_data(
            train_src=data_dir / f"train.{args.src}", train_tgt=data_dir / f"train.{args.tgt}",
            dev_src=data_dir / f"dev.{args.src}", dev_tgt=data_dir / f"dev.{args.tgt}",
            out_dir=args.work_dir or data_dir / "padding_waste", cache_dir=data_dir / "cache",
            tokenizer=TokenizerSettings(vocab_size=args.vocab_size, model_type=args.model_type),
            progress=sys.stderr.isatty(),
        )  # fmt: skip
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    src, tgt = data.train.src_lengths, data.train.tgt_lengths
    print(f"{data_dir} {args.src}->{args.tgt}: {len(src):,} training pairs, {data.src_vocab_size} pieces, "
          f"mean length {src.mean():.1f} / {tgt.mean():.1f} tokens (with eos)")  # fmt: skip
    for max_tokens in args.max_tokens:
        sampler = TokenBatchSampler(src, tgt, max_tokens=max_tokens, seed=args.seed)
        epochs = [sampler.batches(epoch) for epoch in range(args.epochs)]
        waste = np.mean([padding_waste(batches, src, tgt) for batches in epochs])
        per_batch = len(src) / len(sampler)
        print(f"max_tokens={max_tokens:>6}: {len(sampler):>5} batches/epoch, "
              f"{per_batch:6.1f} sentences/batch, padding {waste:6.2%} of batch tokens")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

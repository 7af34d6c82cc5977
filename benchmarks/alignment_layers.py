#!/usr/bin/env python
"""Which decoder layer's cross-attention aligns words best? The measurement behind the default of
seq2seq.inference.alignment.alignment_position (what alignment=true, attention pictures and markup read
in a model trained without guided alignment).

1. reference  eflomal in both directions over the training pairs and the sample together, symmetrized
              with grow-diag-final-and (seq2seq.data.word_alignment), words as `words` splits them; the
              sample's links are the reference. It measures agreement with eflomal, not with a human.
2. per layer  the model reads the reference translation of every sampled verse (teacher forcing); each
              target piece is linked to the source piece that the mean of the layer's heads weighs most
              (seq2seq.inference.alignment.most_attended), and a word pair is linked when any of their
              pieces are. AER = 1 - 2 |A & R| / (|A| + |R|), every reference link counted as sure, with
              precision and recall; lower AER is better. `--heads` adds each head of each layer.

    python benchmarks/alignment_layers.py --checkpoint runs/quickstart/averaged.pt
    python benchmarks/alignment_layers.py --checkpoint ... --limit 200 --train-pairs 5000   # a quick look

Needs the extra `alignment` (eflomal) and the Bible data (`seq2seq-prepare`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from common import describe_machine, format_table, set_threads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from seq2seq.data.word_alignment import align_corpus  # noqa: E402
from seq2seq.inference.alignment import alignment_position, most_attended  # noqa: E402
from seq2seq.inference.api import LoadedModel, load_for_inference  # noqa: E402
from seq2seq.inference.piece_spans import word_of_pieces  # noqa: E402

Link = tuple[int, int]


class Reader:
    """The sample's pieces, teacher-forcing jobs and piece-to-word maps, encoded once for every layer."""

    def __init__(self, loaded: LoadedModel, sources: list[str], targets: list[str]) -> None:
        src_tok, tgt_tok = loaded.src_tokenizer, loaded.tgt_tokenizer
        self.loaded, self.jobs, self.words = loaded, [], []
        for source, target in zip(sources, targets):
            src_ids, tgt_ids = src_tok.encode(source), tgt_tok.encode(target)
            self.jobs.append(([*src_ids, src_tok.eos_id], tgt_ids))
            src_words = word_of_pieces(source, [src_tok.id_to_piece(i) for i in src_ids])
            tgt_words = word_of_pieces(target, [tgt_tok.id_to_piece(i) for i in tgt_ids])
            self.words.append((src_words, tgt_words))

    def links(self, layer: int, head: int | None) -> list[set[Link]]:
        """Per verse, the word links of the argmax attention of `layer` (mean of heads, or `head`)."""
        tokenizer = self.loaded.tgt_tokenizer
        with torch.inference_mode():
            columns = most_attended(self.loaded.model, self.jobs, pad_id=tokenizer.pad_id,
                                    bos_id=tokenizer.bos_id, device=torch.device("cpu"), layer=layer,
                                    head=head)  # fmt: skip
        out = []
        for (src_words, tgt_words), chosen in zip(self.words, columns):
            pairs = {(src_words[s], tgt_words[t]) for t, s in enumerate(chosen) if s < len(src_words)}
            out.append({(s, t) for s, t in pairs if s is not None and t is not None})
        return out


def error_rate(found: list[set[Link]], wanted: list[list[Link]]) -> dict[str, float]:
    """AER, precision and recall (percent) of `found` against `wanted`, every wanted link sure."""
    both = sum(len(a & set(r)) for a, r in zip(found, wanted))
    got, expected = sum(map(len, found)), sum(map(len, wanted))
    return {"aer": 100 * (1 - 2 * both / (got + expected)), "precision": 100 * both / max(got, 1),
            "recall": 100 * both / max(expected, 1)}  # fmt: skip


def sample(data: Path, split: str, limit: int | None) -> tuple[list[str], list[str]]:
    """The first `limit` pairs of `split`, without empty lines (no words, nothing to align)."""
    sources = (data / f"{split}.en").read_text(encoding="utf-8").splitlines()
    targets = (data / f"{split}.es").read_text(encoding="utf-8").splitlines()
    pairs = [(s, t) for s, t in zip(sources, targets) if s.strip() and t.strip()][:limit]
    return [s for s, _ in pairs], [t for _, t in pairs]


def reference(
    data: Path, sources: list[str], targets: list[str], train_pairs: int | None
) -> list[list[Link]]:
    """eflomal's links of the sample, aligned together with (the first `train_pairs`) training pairs."""
    train_src, train_tgt = sample(data, "train", train_pairs)
    return align_corpus(train_src + sources, train_tgt + targets)[len(train_src) :]


def measure(path: Path, pairs: tuple[list[str], list[str]], wanted: list[list[Link]], heads: bool) -> dict:
    """One checkpoint's decoder layers (and with `heads` each head) against the reference."""
    loaded = load_for_inference(path, torch.device("cpu"))
    config = loaded.model.config
    layers, n_heads = int(config["decoder_layers"]), int(config["n_heads"])
    reader = Reader(loaded, *pairs)
    readings: dict[str, dict[str, float]] = {}
    for layer in range(layers):
        for head in [None, *(range(n_heads) if heads else [])]:
            name = f"layer {layer}" + (" (mean of heads)" if head is None else f" head {head}")
            readings[name] = error_rate(reader.links(layer, head), wanted)
    layer, head = alignment_position(config)
    chosen = f"layer {layer % layers}" + (" (mean of heads)" if head is None else f" head {head}")
    return {"checkpoint": str(path), "step": loaded.step, "decoder layers": layers, "readings": readings,
            "rule reads": chosen}  # fmt: skip


def report(result: dict, csv: bool) -> None:
    rows = [[name, f"{r['aer']:.1f}", f"{r['precision']:.1f}", f"{r['recall']:.1f}"]
            for name, r in result["readings"].items()]  # fmt: skip
    print(f"\n{result['checkpoint']} (step {result['step']})")
    print(format_table(["attention read", "AER", "precision", "recall"], rows, csv=csv))
    print(f"alignment_position's rule reads: {result['rule reads']}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", type=Path, nargs="+", required=True,
                        help="encoder-decoder checkpoints, all read against one reference")  # fmt: skip
    parser.add_argument("--data", default=str(ROOT / "data/bible_en_es"), help="<split>.en / <split>.es")
    parser.add_argument("--split", default="test", help="the sample's split (default: test)")
    parser.add_argument("--limit", type=int, default=None, help="pairs of the split (default: all)")
    parser.add_argument("--train-pairs", type=int, default=None, help="training pairs eflomal also reads")
    parser.add_argument("--heads", action="store_true", help="each head of each layer too")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--csv", action="store_true", help="print CSV instead of Markdown")
    parser.add_argument("--output", type=Path, default=None, help="a JSON file for the results")
    args = parser.parse_args(argv)
    print(describe_machine(set_threads(args.threads)))
    sources, targets = sample(Path(args.data), args.split, args.limit)
    wanted = reference(Path(args.data), sources, targets, args.train_pairs)
    print(f"{len(sources)} verses of {args.split}, {sum(map(len, wanted))} reference links", flush=True)
    results = []
    for path in args.checkpoint:
        results.append(measure(path, (sources, targets), wanted, args.heads))
        report(results[-1], args.csv)
    if args.output is not None:
        summary = {"verses": len(sources), "reference links": sum(map(len, wanted)), "checkpoints": results}
        args.output.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Quality estimation on the Bible test set: how well each signal predicts a translation's sentence chrF,
what re-ranking the n-best list by it does to BLEU, and what scoring costs.

    python benchmarks/qe.py --checkpoint runs/quickstart/averaged.pt --qe runs/qe/best.pt
    python benchmarks/qe.py ... --limit 200          # a quick look on the first 200 sentences

Both dev and test are translated with the checkpoint's own decoding settings (beam 5 and its tuned
length penalty), keeping the 5-best. For each top translation:
    model confidence   the mean log-probability of its tokens (eos included), as the search returns it
    QE score           the encoder-only model's prediction (seq2seq-qe)
    combined           a least-squares mix of the two, fitted on dev, applied to test
    label              sacrebleu's sentence chrF against the reference
Reported: Pearson and Spearman of each signal with the label on test; test BLEU/chrF of plain beam 5
against re-ranking the 5-best by (model score + w * QE score), w chosen on dev for BLEU; QE scoring
speed next to translation speed, on this machine in the same run.

    python benchmarks/qe.py --checkpoint ... --confidence-cost 300

times Translator.translate on the first 300 test sentences with and without confidence=True,
alternating, three times each, and prints the best time of each and their ratio.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import sacrebleu
import torch

from seq2seq import Translator
from seq2seq.inference.text_input import read_text_lines
from seq2seq.qe.correlation import pearson, spearman
from seq2seq.qe.labels import sentence_labels
from seq2seq.inference.quality import QualityEstimator

WEIGHTS = [0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0]


def translate_nbest(
    translator: Translator, sources: list[str], nbest: int
) -> tuple[list[list[tuple]], float]:
    """Per source, its n-best (text, score, mean log-prob) best first, and the seconds the search took."""
    options = translator.options.replace(nbest=nbest)
    encoded = translator.encode(sources)
    start = time.perf_counter()
    results = translator.search(encoded.sources, options)
    seconds = time.perf_counter() - start
    rows = []
    for nbest_list in results:
        rows.append([
            (translator.detokenize(h.tokens), h.score, float(np.mean(h.positional_scores)))
            for h in nbest_list
        ])  # fmt: skip
    return rows, seconds


def qe_scores(estimator: QualityEstimator, sources: list[str], rows: list[list[tuple]]) -> list[list[float]]:
    """The QE score of every n-best entry (one batch call)."""
    pairs = [(s, text) for s, row in zip(sources, rows) for text, _, _ in row]
    flat = estimator.score([s for s, _ in pairs], [t for _, t in pairs])
    out, at = [], 0
    for row in rows:
        out.append([0.0 if v is None else v for v in flat[at : at + len(row)]])
        at += len(row)
    return out


def rerank(rows: list[list[tuple]], qe: list[list[float]], weight: float) -> list[str]:
    return [row[int(np.argmax([s + weight * q for (_, s, _), q in zip(row, scores)]))][0]
            for row, scores in zip(rows, qe)]  # fmt: skip


def split_signals(translator, estimator, sources, references, nbest):
    rows, seconds = translate_nbest(translator, sources, nbest)
    qe = qe_scores(estimator, sources, rows)
    top = [row[0][0] for row in rows]
    start = time.perf_counter()
    top_qe = estimator.score(sources, top)
    qe_seconds = time.perf_counter() - start
    return {
        "rows": rows, "qe": qe, "top": top, "labels": sentence_labels(top, references),
        "confidence": [row[0][2] for row in rows], "top_qe": [0.0 if v is None else v for v in top_qe],
        "translate_seconds": seconds, "qe_seconds": qe_seconds,
    }  # fmt: skip


def confidence_cost(translator: Translator, sources: list[str], rounds: int = 3) -> dict[str, float]:
    """Best-of-`rounds` seconds of translate() without and with confidence, alternating."""
    best = {"plain": float("inf"), "confidence": float("inf")}
    for _ in range(rounds):
        for name, flag in (("plain", False), ("confidence", True)):
            start = time.perf_counter()
            translator.translate(sources, confidence=flag)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", required=True, help="the translation checkpoint (the quickstart's)")
    parser.add_argument("--qe", help="the QE checkpoint (seq2seq-qe-train's best.pt)")
    parser.add_argument("--data", default="data/bible_en_es", help="dev.en/dev.es/test.en/test.es are here")
    parser.add_argument("--nbest", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences of each split")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--confidence-cost", type=int, default=None, metavar="N",
                        help="time translate() with and without confidence on N test sentences")  # fmt: skip
    args = parser.parse_args()
    translator = Translator.from_checkpoint(args.checkpoint)
    if args.confidence_cost:
        sources = read_text_lines(Path(args.data) / "test.en")[: args.confidence_cost]
        best = confidence_cost(translator, sources)
        print(
            f"{len(sources)} sentences, {translator.options.describe()}, "
            f"{torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads (best of 3):"
        )
        for name, seconds in best.items():
            print(f"  {name:10s} {seconds:.2f} s  {len(sources) / seconds:.1f} sentences/s")
        print(f"  with confidence / without: {best['confidence'] / best['plain']:.3f} of the time")
        return
    if not args.qe:
        parser.error("--qe is required (except with --confidence-cost)")
    estimator = QualityEstimator.from_checkpoint(args.qe)
    data = Path(args.data)
    splits = {}
    for split in ("dev", "test"):
        sources = read_text_lines(data / f"{split}.en")[: args.limit]
        references = read_text_lines(data / f"{split}.es")[: args.limit]
        splits[split] = {"references": references, **split_signals(translator, estimator, sources, references,
                                                                    args.nbest)}  # fmt: skip
    dev, test = splits["dev"], splits["test"]

    def design(split: dict) -> np.ndarray:  # (N, 3): confidence, QE score, 1
        return np.c_[split["confidence"], split["top_qe"], np.ones(len(split["top_qe"]))]

    mix, *_ = np.linalg.lstsq(design(dev), np.asarray(dev["labels"]), rcond=None)
    combined = design(test) @ mix
    correlations = {
        name: {"pearson": pearson(values, test["labels"]), "spearman": spearman(values, test["labels"])}
        for name, values in (("model confidence", test["confidence"]), ("QE score", test["top_qe"]),
                             ("combined", combined))
    }  # fmt: skip
    dev_bleu = {w: sacrebleu.corpus_bleu(rerank(dev["rows"], dev["qe"], w), [dev["references"]]).score
                for w in WEIGHTS}  # fmt: skip
    weight = max(WEIGHTS, key=lambda w: (dev_bleu[w], -w))
    reranked = rerank(test["rows"], test["qe"], weight)
    scores = {
        name: {"bleu": sacrebleu.corpus_bleu(hyps, [test["references"]]).score,
               "chrf": sacrebleu.corpus_chrf(hyps, [test["references"]]).score}
        for name, hyps in (("beam", test["top"]), ("reranked", reranked))
    }  # fmt: skip
    n = len(test["top"])
    results = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(),
        },
        "sentences": n, "nbest": args.nbest, "search": translator.options.describe(),
        "correlations": correlations, "mix_on_dev": mix.tolist(), "dev_bleu_by_weight": dev_bleu,
        "weight": weight, "test": scores,
        "translate_sentences_per_second": n / test["translate_seconds"],
        "qe_sentences_per_second": n / test["qe_seconds"],
        "mean_label": {"dev": float(np.mean(dev["labels"])), "test": float(np.mean(test["labels"]))},
    }  # fmt: skip
    print(f"{n} test sentences, {translator.options.describe()} ({args.nbest}-best), "
          f"{results['machine']['capability']}, {results['machine']['threads']} threads")  # fmt: skip
    print("| signal | Pearson | Spearman |\n|---|---:|---:|")
    for name, values in correlations.items():
        print(f"| {name} | {values['pearson']:.3f} | {values['spearman']:.3f} |")
    chosen, plain = dev_bleu[weight], dev_bleu[0.0]
    print(f"\nre-ranking weight chosen on dev: {weight} (dev BLEU {chosen:.2f} against {plain:.2f})")
    print("| test | BLEU | chrF |\n|---|---:|---:|")
    for name, values in scores.items():
        print(f"| {name} | {values['bleu']:.2f} | {values['chrf']:.2f} |")
    speed, qe_speed = results["translate_sentences_per_second"], results["qe_sentences_per_second"]
    print(f"\ntranslation (beam, {args.nbest}-best): {speed:.1f} sentences/s; "
          f"QE scoring: {qe_speed:.1f} sentences/s ({qe_speed / speed:.1f}x)")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

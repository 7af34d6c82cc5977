#!/usr/bin/env python
"""The cleaning table: what the recommended transforms (docs/data-cleaning.md) do to the Bible training
corpus, and how much labelled noise they remove from a deliberately noisy copy of it.

    python benchmarks/cleaning.py --json benchmarks/cleaning.json
    python benchmarks/cleaning.py --no-model       # the rule-based transforms only (a few minutes)

(a) The real corpus (data/bible_en_es/train.{en,es}): seq2seq.data.cleaning.clean_corpus with the
    recommended list, the TranslationScoreFilter last with the threshold tuned in (b); per transform,
    the pairs it removed or changed, and the wall time.
(b) A noisy copy of the same pairs, built with a fixed seed: `--share` of the pairs (5% per kind) become
      duplicate       an exact copy of another pair, inserted after it
      copied          the target replaced by its own source
      wrong_language  the Spanish side replaced by the English of another verse (half of them), or the
                      English side by the Spanish of another verse (the other half)
      misaligned      the target replaced by the target of another, random verse
    and every line keeps its label in memory. The transforms run on it chunk by chunk as clean_corpus
    runs them, and the script counts, per kind, the share removed, and the share of clean pairs lost.
    Pairs that were already exact duplicates in the Bible corpus (170 of them) are counted apart
    ("natural duplicates"): removing them is right, and they are neither noise we injected nor loss.

The score filter's threshold (`min_score`) is the one thing tuned, and it is tuned on the even-numbered
lines of the noisy copy only: the highest threshold whose clean loss there (rules included) stays within
`--clean-budget`. The table reports the odd-numbered lines (held out) and all lines. Every scorer is
tuned and reported: each model with each method (seq2seq.inference.pair_filter: conditional, contrastive),
alone and with the reverse model when there is one. The model of runs/families/encoder_decoder trained
on every clean pair of this corpus (which flatters the clean pairs); the low-resource models
(runs/low_resource/, 25% of the pairs) saw a quarter of them, and the table also splits the clean loss
by pairs they saw and pairs they did not. Part (a) uses the first of PREFERENCE that exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import random
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

from seq2seq.cli.config.data_config import cleaning_transforms
from seq2seq.data.cleaning import clean_corpus
from seq2seq.data.corpus import read_parallel
from seq2seq.data.transforms import Transform
from seq2seq.inference.pair_filter import METHODS, TranslationScoreFilter, combined

KINDS = ("duplicate", "copied", "wrong_language", "misaligned")
CLEAN, NATURAL = "clean", "natural_duplicate"
Pair = tuple[str, str]


def recommended_rules(src_lang: str, tgt_lang: str) -> list[Transform]:
    """The recommended list without the model, default settings throughout: the `data.transforms` entries
    of docs/data-cleaning.md, built as seq2seq-prepare builds them, so what is measured is what that
    config runs."""
    languages = {"src_lang": src_lang, "tgt_lang": tgt_lang}
    entries = [
        {"_target_": "seq2seq.data.transforms.MosesPunctuation", **languages},
        {"_target_": "seq2seq.data.transforms.UnicodeNormalize", "form": "NFKC"},
        {"_target_": "seq2seq.data.transforms.DropIdentical"},
        {"_target_": "seq2seq.data.transforms.DropRepeats"},
        {"_target_": "seq2seq.data.transforms.DropLengthRatio"},
        {"_target_": "seq2seq.data.transforms.Deduplicate"},
        {"_target_": "seq2seq.data.transforms.LanguageFilter", **languages},
    ]
    return cleaning_transforms(OmegaConf.create({"transforms": entries}))


# ----------------------------------------------------------------------------- the noisy copy


def make_noisy(pairs: list[Pair], share: float, seed: int) -> tuple[list[Pair], list[str], list[int]]:
    """The noisy copy, each line's label, and each line's original verse index (-1 for none)."""
    rng, n = random.Random(seed), len(pairs)
    per_kind = round(share * n)
    chosen = rng.sample(range(n), 3 * per_kind)  # disjoint lines for the three replacing kinds
    noisy, labels = list(pairs), [CLEAN] * n

    def other(i: int) -> int:
        j = rng.randrange(n - 1)
        return j + (j >= i)

    for i in chosen[:per_kind]:
        noisy[i], labels[i] = (pairs[i][0], pairs[i][0]), "copied"
    for k, i in enumerate(chosen[per_kind : 2 * per_kind]):
        j = other(i)
        noisy[i] = (pairs[i][0], pairs[j][0]) if k % 2 == 0 else (pairs[j][1], pairs[i][1])
        labels[i] = "wrong_language"
    for i in chosen[2 * per_kind :]:
        noisy[i], labels[i] = (pairs[i][0], pairs[other(i)][1]), "misaligned"
    origin = list(range(n))
    clean = [i for i in range(n) if labels[i] == CLEAN]
    inserts = sorted(((rng.randint(i + 1, n), i) for i in rng.sample(clean, per_kind)), reverse=True)
    for position, i in inserts:  # from the end, so earlier positions stay valid
        noisy.insert(position, pairs[i])
        labels.insert(position, "duplicate")
        origin.insert(position, -1)
    seen: set[Pair] = set()
    for line, pair in enumerate(noisy):  # exact duplicates already in the corpus: their own label
        if pair in seen and labels[line] == CLEAN:
            labels[line] = NATURAL
        seen.add(pair)
    return noisy, labels, origin


def run_rules(
    pairs: list[Pair], transforms: list[Transform], chunk_pairs: int = 10_000
) -> tuple[list[int], list[Pair], list[list[int]], list[float]]:
    """The transforms over the pairs chunk by chunk, as clean_corpus runs them: the surviving line
    numbers and pairs, the lines each transform removed, and each transform's seconds."""
    for transform in transforms:
        transform.reset()
    removed: list[list[int]] = [[] for _ in transforms]
    seconds = [0.0] * len(transforms)
    kept_lines, kept_pairs = [], []
    for start in range(0, len(pairs), chunk_pairs):
        lines, chunk = (
            list(range(start, min(start + chunk_pairs, len(pairs)))),
            pairs[start : start + chunk_pairs],
        )
        for t, transform in enumerate(transforms):
            began = time.perf_counter()
            results = transform(chunk) if chunk else []
            seconds[t] += time.perf_counter() - began
            removed[t] += [line for line, result in zip(lines, results) if result is None]
            lines = [line for line, result in zip(lines, results) if result is not None]
            chunk = [result for result in results if result is not None]
        kept_lines += lines
        kept_pairs += chunk
    return kept_lines, kept_pairs, removed, seconds


# ----------------------------------------------------------------------------- scores and thresholds


def cached_scores(scorer: TranslationScoreFilter, pairs: list[Pair], work: Path, tag: str) -> np.ndarray:
    """scorer.scores(pairs), kept in `work` under a name of the models and the pairs (reruns are free)."""
    settings = {key: value for key, value in scorer.settings().items() if key != "min_score"}
    digest = hashlib.sha256(json.dumps([settings, pairs]).encode()).hexdigest()[:16]
    path = work / f"scores-{tag}-{digest}.npy"
    if path.exists():
        return np.load(path)
    began = time.perf_counter()
    scores = np.array(scorer.scores(pairs), dtype=np.float64)
    logging.info("scored %d pairs (%s) in %.0f s", len(pairs), tag, time.perf_counter() - began)
    np.save(path, scores)
    return scores


def tune_threshold(
    scores: np.ndarray, labels: np.ndarray, rule_lost: int, clean_total: int, budget: float
) -> float:
    """The highest min_score whose clean loss (rule losses + clean pairs scored below it) stays within
    `budget` of `clean_total`; `scores` and `labels` are of the pairs the rules kept."""
    allowed = int(budget * clean_total) - rule_lost
    clean_scores = np.sort(scores[labels == CLEAN])
    if allowed < 0 or len(clean_scores) == 0:
        return float("-inf")
    if allowed >= len(clean_scores):
        return float(clean_scores[-1])
    return float(clean_scores[allowed])  # `allowed` clean pairs lie strictly below it


def outcome(labels: np.ndarray, removed: np.ndarray, lines: np.ndarray) -> dict[str, Any]:
    """Per kind, the share of `lines` of that kind that `removed` (a mask over all lines) holds."""
    result: dict[str, Any] = {}
    for kind in (*KINDS, CLEAN, NATURAL):
        of_kind = lines[labels[lines] == kind]
        result[kind] = {"lines": len(of_kind), "removed": int(removed[of_kind].sum())}
        result[kind]["share"] = result[kind]["removed"] / max(1, len(of_kind))
    noise = sum(result[kind]["removed"] for kind in KINDS), sum(result[kind]["lines"] for kind in KINDS)
    result["noise"] = {"lines": noise[1], "removed": noise[0], "share": noise[0] / max(1, noise[1])}
    return result


def scorer_variants(args: argparse.Namespace, pairs: list[Pair], work: Path) -> dict[str, dict[str, Any]]:
    """Per scorer (model, method, with or without the reverse model): its settings and its scores of `pairs`,
    composed from each model's conditional log-probabilities with and without the source as the filter
    composes them (seq2seq.inference.pair_filter.combined); each part is computed once and cached."""
    variants: dict[str, dict[str, Any]] = {}
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    for label, forward, reverse in (("low-resource", args.low_resource, args.low_resource_reverse),
                                    ("full-data", args.checkpoint, None)):  # fmt: skip
        forward, reverse = first_existing(forward), first_existing(reverse)
        if forward is None:
            continue
        parts = {"forward": direction_parts(forward, sources, targets, work, "forward")}
        if reverse is not None:
            parts["reverse"] = direction_parts(reverse, targets, sources, work, "reverse")
        for method in METHODS:
            scores = parts["forward"][method]
            variants[f"{label} {method}"] = {"checkpoint": str(forward), "reverse": None, "method": method,
                                             "scores": scores}  # fmt: skip
            if reverse is not None:
                both = np.array([combined(f, b, method) for f, b in zip(scores, parts["reverse"][method])])
                variants[f"{label} {method} + reverse"] = {
                    "checkpoint": str(forward), "reverse": str(reverse), "method": method, "scores": both
                }  # fmt: skip
    return variants


def direction_parts(
    checkpoint: Path, sources: list[str], targets: list[str], work: Path, tag: str
) -> dict[str, np.ndarray]:
    """One model's conditional scores of the pairs, and their contrast with an empty source."""
    scorer = TranslationScoreFilter(checkpoint=str(checkpoint), method="conditional")
    conditional = cached_scores(scorer, list(zip(sources, targets)), work, tag)
    unconditional = cached_scores(scorer, [("", t) for t in targets], work, f"{tag}-empty-source")
    return {"conditional": conditional, "contrastive": conditional - unconditional}


def first_existing(candidates: list[str] | None) -> Path | None:
    return next((Path(c) for c in candidates or [] if Path(c).is_file()), None)


def noisy_experiment(args: argparse.Namespace, pairs: list[Pair], work: Path) -> dict[str, Any]:
    """Part (b): the noisy copy through the rules, then each scorer tuned on even lines."""
    noisy, label_list, origin = make_noisy(pairs, args.share, args.seed)
    labels, lines = np.array(label_list), np.arange(len(noisy))
    rules = recommended_rules(args.src_lang, args.tgt_lang)
    began = time.perf_counter()
    kept_lines, kept_pairs, removed_by, seconds = run_rules(noisy, rules)
    rules_seconds = time.perf_counter() - began
    rule_removed = np.ones(len(noisy), dtype=bool)
    rule_removed[kept_lines] = False
    kept = np.array(kept_lines)
    per_transform = {
        name: dict(Counter(label_list[line] for line in removed))
        for name, removed in zip([rule.name for rule in rules], removed_by)
    }
    seen = seen_pairs(args.low_resource_train)
    even = lines % 2 == 0
    results: dict[str, Any] = {}
    variants = {} if args.no_model else scorer_variants(args, kept_pairs, work)
    for name, variant in variants.items():
        scores = variant.pop("scores")
        on_even = even[kept]
        rule_lost = int((rule_removed & even & (labels == CLEAN)).sum())
        threshold = tune_threshold(scores[on_even], labels[kept][on_even], rule_lost,
                                   int((even & (labels == CLEAN)).sum()), args.clean_budget)  # fmt: skip
        removed = rule_removed.copy()
        removed[kept[scores < threshold]] = True
        per_transform[f"TranslationScore ({name})"] = dict(Counter(labels[kept[scores < threshold]].tolist()))
        results[name] = {
            **variant,
            "min_score": threshold,
            "held_out": outcome(labels, removed, lines[~even]),
            "all": outcome(labels, removed, lines),
            "clean_lost_by_seen": split_by_seen(labels, removed, origin, pairs, seen),
        }
    rules_only = outcome(labels, rule_removed, lines)
    return {"lines": len(noisy), "labels": dict(Counter(label_list)), "rules_seconds": rules_seconds,
            "rule_seconds": {r.name: t for r, t in zip(rules, seconds)}, "per_transform": per_transform,
            "rules_only": rules_only, "scorers": results}  # fmt: skip


def seen_pairs(paths: list[str]) -> set[Pair] | None:
    """The pairs the low-resource models trained on, if their files exist."""
    if not all(Path(p).is_file() for p in paths):
        return None
    sources, targets = read_parallel(paths[0], paths[1])
    return set(zip(sources, targets))


def split_by_seen(
    labels: np.ndarray, removed: np.ndarray, origin: list[int], pairs: list[Pair], seen: set[Pair] | None
) -> dict[str, Any] | None:
    """Clean loss among the clean pairs the low-resource models trained on, and among the others."""
    if seen is None:
        return None
    result = {}
    for name, wanted in (("seen", True), ("unseen", False)):
        group = [i for i in range(len(labels)) if labels[i] == CLEAN and (pairs[origin[i]] in seen) == wanted]
        lost = int(removed[group].sum())
        result[name] = {"lines": len(group), "removed": lost, "share": lost / max(1, len(group))}
    return result


def real_corpus(args: argparse.Namespace, scorer: dict[str, Any] | None, cache: Path) -> dict[str, Any]:
    """Part (a): clean_corpus on the real files, the primary scorer last at its tuned threshold."""
    transforms = recommended_rules(args.src_lang, args.tgt_lang)
    if scorer is not None:
        last = TranslationScoreFilter(
            checkpoint=scorer["checkpoint"],
            reverse_checkpoint=scorer["reverse"],
            min_score=scorer["min_score"],
        )
        transforms.append(last)
    corpus = Path(args.corpus)
    began = time.perf_counter()
    result = clean_corpus(corpus / f"train.{args.src_lang}", corpus / f"train.{args.tgt_lang}", transforms,
                          cache_dir=cache)  # fmt: skip
    return {"wall_seconds": time.perf_counter() - began, "summary": result.summary}


def machine() -> dict[str, Any]:
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next(
        (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "?"
    )
    return {
        "cpu": model,
        "capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def print_tables(results: dict[str, Any]) -> None:
    """The markdown tables of docs/data-cleaning.md."""
    info = results["machine"]
    print(
        f"\nCPU: {info['cpu']} ({info['capability']}), {info['threads']} threads, load {info['load_average']}"
    )
    if "real" in results:
        real = results["real"]
        print(
            f"\n(a) {real['summary']['pairs_in']:,} Bible training pairs, "
            f"{real['wall_seconds']:.0f} s wall time"
        )
        print("| transform | pairs seen | removed | changed | seconds |\n|---|---:|---:|---:|---:|")
        for t in real["summary"]["transforms"]:
            print(
                f"| {t['name']} | {t['seen']:,} | {t['removed']:,} | {t['changed']:,} | {t['seconds']:.1f} |"
            )
        print(f"| **kept** | | {real['summary']['pairs_out']:,} of {real['summary']['pairs_in']:,} | | |")
    noisy = results["noisy"]
    kinds = (*KINDS, CLEAN, NATURAL)
    print(
        f"\n(b) noisy copy: {noisy['lines']:,} lines; "
        + ", ".join(f"{k} {v:,}" for k, v in noisy["labels"].items())
    )
    print("\nLines removed, by transform and label (all lines):\n")
    print("| transform | " + " | ".join(kinds) + " |\n|---|" + "---:|" * len(kinds))
    for name, counts in noisy["per_transform"].items():
        print(f"| {name} | " + " | ".join(f"{counts.get(k, 0):,}" for k in kinds) + " |")
    print("\nShare removed (held out = odd lines; min_score tuned on even lines):\n")
    header = "| transforms | min_score | noise held out | clean lost held out | noise all | clean lost all | "
    print(header + " | ".join(KINDS) + " (all) |\n|---|---:|---:|---:|---:|---:|" + "---:|" * len(KINDS))
    rows = [("rules only", None, None, noisy["rules_only"])]
    rows += [
        (f"rules + {name}", s["min_score"], s["held_out"], s["all"]) for name, s in noisy["scorers"].items()
    ]
    for name, threshold, held, every in rows:
        cells = [name, "" if threshold is None else f"{threshold:.3f}"]
        cells += [f"{held['noise']['share']:.1%}", f"{held[CLEAN]['share']:.2%}"] if held else ["", ""]
        cells += [f"{every['noise']['share']:.1%}", f"{every[CLEAN]['share']:.2%}"]
        cells += [f"{every[k]['share']:.1%}" for k in KINDS]
        print("| " + " | ".join(cells) + " |")
    for name, s in noisy["scorers"].items():
        if s["clean_lost_by_seen"]:
            split = s["clean_lost_by_seen"]
            print(f"\n{name}: clean pairs lost among those the low-resource models trained on "
                  f"{split['seen']['share']:.2%} of {split['seen']['lines']:,}, among the others "
                  f"{split['unseen']['share']:.2%} of {split['unseen']['lines']:,}")  # fmt: skip


# The scorer part (a) uses: the fairest model (not trained on most of these pairs) and the best method
# on the noisy copy, when it exists.
PREFERENCE = ("low-resource contrastive + reverse", "low-resource contrastive", "full-data contrastive")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default="data/bible_en_es")
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--tgt-lang", default="es")
    parser.add_argument("--checkpoint", nargs="*", default=["runs/families/encoder_decoder/averaged.pt"],
                        help="the full-data en->es model (the first that exists)")  # fmt: skip
    low = "runs/low_resource/a_parallel_only/", "runs/low_resource/reverse_es_en/"
    parser.add_argument("--low-resource", nargs="*", default=[low[0] + "averaged.pt", low[0] + "best.pt"],
                        help="the low-resource en->es model (the first that exists)")  # fmt: skip
    parser.add_argument("--low-resource-reverse", nargs="*", help="its es->en model (dual scores)",
                        default=[low[1] + "averaged.pt", low[1] + "best.pt"])  # fmt: skip
    parser.add_argument(
        "--low-resource-train",
        nargs=2,
        default=["data/low_resource/train.en", "data/low_resource/train.es"],
        help="the pairs the low-resource models saw",
    )
    parser.add_argument("--share", type=float, default=0.05, help="of the pairs, per noise kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clean-budget", type=float, default=0.008, help="clean loss allowed when tuning")
    parser.add_argument("--no-model", action="store_true", help="the rule-based transforms only")
    parser.add_argument(
        "--work-dir", default=None, help="scores are kept here between runs (default: temporary)"
    )
    parser.add_argument("--json", default=None, help="also write the results to this file")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    began = time.perf_counter()
    corpus = Path(args.corpus)
    sources, targets = read_parallel(corpus / f"train.{args.src_lang}", corpus / f"train.{args.tgt_lang}")
    with tempfile.TemporaryDirectory(prefix="cleaning-bench-") as temporary:
        work = Path(args.work_dir or temporary)
        work.mkdir(parents=True, exist_ok=True)
        results: dict[str, Any] = {"machine": machine()}
        results["noisy"] = noisy_experiment(args, list(zip(sources, targets)), work)
        scorers = results["noisy"]["scorers"]
        primary = None
        for preference in PREFERENCE:
            if preference in scorers:
                primary = {**scorers[preference], "name": preference}
                break
        results["primary"] = None if primary is None else primary["name"]
        results["real"] = real_corpus(args, primary, Path(temporary) / "cache")
    results["wall_seconds"] = time.perf_counter() - began
    results["machine"]["load_average_end"] = os.getloadavg()
    print_tables(results)
    print(f"\nprimary scorer: {results['primary']}; total wall time {results['wall_seconds']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

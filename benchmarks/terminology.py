#!/usr/bin/env python
"""Terminology constraints on the Bible test set: build a test of target phrases that every translation
must contain, then measure what lexically constrained decoding does to term accuracy, quality and speed.

    python benchmarks/terminology.py --build-only                    # (a) only: writes the constraints
    python benchmarks/terminology.py --checkpoint runs/families/encoder_decoder/averaged.pt
    python benchmarks/terminology.py --checkpoint ... --limit 100    # a quick look on 100 sentences

(a) The test. Words are the whitespace-separated tokens of a line with the surrounding punctuation
(,.;:!?¿¡()[]"'«»“”‘’ and hyphens) stripped, so "Ben-adad:" is the word "Ben-adad". train.es is counted
once: how often each word occurs (case-sensitive), and, per lowercased word, how many of its occurrences
start with an uppercase letter. From the Spanish reference of each test sentence (test.es) the
candidates are:
    rare word   all cased letters lowercase, at least 5 letters, and at most --rare (default 3)
                occurrences in train.es (0 included): the words the model has barely seen;
    name        starts with an uppercase letter, is not the first word of the verse, and is either
                absent from train.es or capitalised in at least 90% of its occurrences there (so
                "Jehová" and "Galaad" are names; "Entonces" or "Señor" after a colon are not).
Candidates are deduplicated and ranked rare words first, then names; within each kind the fewer
occurrences in train.es first, then the earlier in the verse. Up to --per-sentence (default 2) are
taken in that order, skipping one that, ignoring case, is a substring of an already chosen term or
contains one ("Alabad" after "alabad"; a decoder could satisfy "Israel" with "Israelitas", which the
word-boundary check below would not count). Every chosen term occurs in its reference on word
boundaries (not preceded or followed by a letter or digit) by construction; this is checked and
recorded anyway. The file written (--out) has one line per test sentence, its terms separated by tabs,
an empty line for none: the format of `seq2seq-translate constraints=FILE`.

(b) The measurement (--checkpoint). Translator.from_checkpoint(PATH) with its own settings, beam
--beam-size (default 5). Both passes are warmed up on the first 20 sentences, then all test sentences
are translated without and with the constraints (sentences without terms get an empty list), the two
passes alternating over --rounds rounds with the order rotated every round; each pass is timed with
time.perf_counter and the best of its rounds is reported. Reported: sentences/s of each pass and the
time ratio constrained / unconstrained; the share of terms met (the term occurs in the output on word
boundaries, the rule above) by the constrained output, and the share the unconstrained output already
had, overall and per kind; corpus BLEU and chrF (sacrebleu) of both outputs on all sentences and on the
sentences with at least one term; the CPU model, torch's CPU capability, threads and load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# torch, sacrebleu and seq2seq are imported by the measuring functions only: building the test needs
# the standard library alone, so its unit test (tests/test_terminology_builder.py) loads no model code.
if TYPE_CHECKING:
    from seq2seq import Translator

PUNCTUATION = ",.;:!?¿¡()[]\"'«»“”‘’-"
NAME_SHARE = 0.9  # a capitalised word is a name if capitalised in at least this share of train.es
MIN_RARE_LETTERS = 5
WARMUP_SENTENCES = 20


# ----------------------------------------------------------------------------- (a) building the test


@dataclass(frozen=True)
class Term:
    """One constraint phrase chosen from a reference."""

    text: str
    kind: str  # "rare" or "name"
    train_count: int  # occurrences in train.es, case-sensitive
    in_reference: bool = False  # occurs in the reference on word boundaries (always, by construction)


@dataclass
class TrainCounts:
    """Word counts of train.es."""

    exact: Counter[str]  # per word, case-sensitive
    folded: Counter[str]  # per lowercased word
    capitalised: Counter[str]  # per lowercased word: the occurrences starting with an uppercase letter

    def capitalised_share(self, word: str) -> float | None:
        """The share of `word`'s occurrences (any case) that are capitalised; None if it never occurs."""
        total = self.folded[word.lower()]
        return self.capitalised[word.lower()] / total if total else None


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 file without line ends (only "\\n" ends a line)."""
    text = path.read_text(encoding="utf-8")
    return text.removesuffix("\n").split("\n") if text else []


def words(line: str) -> list[str]:
    """The whitespace-separated tokens of `line` with surrounding punctuation stripped, empty ones dropped."""
    return [word for word in (token.strip(PUNCTUATION) for token in line.split()) if word]


def count_train(lines: Sequence[str]) -> TrainCounts:
    counts = TrainCounts(Counter(), Counter(), Counter())
    for line in lines:
        for word in words(line):
            counts.exact[word] += 1
            counts.folded[word.lower()] += 1
            counts.capitalised[word.lower()] += word[0].isupper()
    return counts


def occurs(term: str, text: str) -> bool:
    """Whether `term` occurs in `text` on word boundaries: not preceded or followed by a letter or digit."""
    start = text.find(term)
    while start >= 0:
        end = start + len(term)
        before_ok = start == 0 or not text[start - 1].isalnum()
        after_ok = end == len(text) or not text[end].isalnum()
        if before_ok and after_ok:
            return True
        start = text.find(term, start + 1)
    return False


def is_rare(word: str, counts: TrainCounts, rare: int) -> bool:
    letters = sum(ch.isalpha() for ch in word)
    return word.islower() and letters >= MIN_RARE_LETTERS and counts.exact[word] <= rare


def is_name(word: str, counts: TrainCounts) -> bool:
    share = counts.capitalised_share(word)
    return word[0].isupper() and (share is None or share >= NAME_SHARE)


def candidates(reference: str, counts: TrainCounts, rare: int) -> list[Term]:
    """The distinct rare words and names of `reference`, in the order they first occur."""
    found: dict[str, Term] = {}
    for position, word in enumerate(words(reference)):
        if word in found:
            continue
        if is_rare(word, counts, rare):
            found[word] = Term(word, "rare", counts.exact[word])
        elif position > 0 and is_name(word, counts):
            found[word] = Term(word, "name", counts.exact[word])
    return list(found.values())


def overlap(a: str, b: str) -> bool:
    """Whether one of the two is a substring of the other, ignoring case."""
    a, b = a.lower(), b.lower()
    return a in b or b in a


def choose_terms(reference: str, counts: TrainCounts, per_sentence: int, rare: int) -> list[Term]:
    """Up to `per_sentence` terms of `reference`: rare words before names, the rarer first, no term
    inside another (ignoring case)."""
    found = candidates(reference, counts, rare)
    ranked = sorted(range(len(found)), key=lambda i: (found[i].kind != "rare", found[i].train_count, i))
    chosen: list[Term] = []
    for term in (found[i] for i in ranked):
        if len(chosen) == per_sentence:
            break
        if any(overlap(term.text, other.text) for other in chosen):
            continue
        chosen.append(Term(term.text, term.kind, term.train_count, occurs(term.text, reference)))
    return chosen


def build(
    references: Path, train: Path, *, per_sentence: int = 2, rare: int = 3, limit: int | None = None
) -> list[list[Term]]:
    """The chosen terms of every reference line (the first `limit` lines if given)."""
    counts = count_train(read_lines(train))
    return [choose_terms(line, counts, per_sentence, rare) for line in read_lines(references)[:limit]]


def write_constraints(path: Path, chosen: Sequence[Sequence[Term]]) -> None:
    """One line per sentence, its terms separated by tabs (seq2seq-translate's constraints=FILE)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(t.text for t in terms) + "\n" for terms in chosen), encoding="utf-8")


def summarize(chosen: Sequence[Sequence[Term]], per_sentence: int) -> dict:
    """How many sentences got 0, 1, ... terms; how many terms of each kind; how many were verified."""
    per_count = Counter(len(terms) for terms in chosen)
    kinds = Counter(t.kind for terms in chosen for t in terms)
    return {
        "sentences": len(chosen),
        "sentences_with_n_terms": {n: per_count[n] for n in range(per_sentence + 1)},
        "terms": sum(kinds.values()),
        "names": kinds["name"],
        "rare_words": kinds["rare"],
        "terms_in_reference": sum(t.in_reference for terms in chosen for t in terms),
    }


def print_summary(summary: dict) -> None:
    by_count = " / ".join(str(v) for v in summary["sentences_with_n_terms"].values())
    counts = "/".join(str(n) for n in summary["sentences_with_n_terms"])
    print(f"{summary['sentences']} sentences; with {counts} terms: {by_count}")
    print(
        f"{summary['terms']} terms: {summary['names']} names, {summary['rare_words']} rare words; "
        f"{summary['terms_in_reference']} occur in their reference on word boundaries"
    )


# ----------------------------------------------------------------------------- (b) measuring


def cpu_model() -> str:
    """The "model name" of /proc/cpuinfo, or what platform knows elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_machine() -> dict:
    import torch

    return {
        "cpu": cpu_model(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed_passes(
    translator: Translator, sources: list[str], constraints: list[list[str]], beam_size: int, rounds: int,
    length_penalty: float | None = None,
) -> tuple[dict[str, list[str]], dict[str, list[float]]]:  # fmt: skip
    """The outputs and the seconds of each round of the unconstrained and the constrained pass, after one
    warm-up of both on the first sentences; the order of the two is rotated every round."""
    search = {"beam_size": beam_size, "length_penalty": length_penalty}
    passes = {
        "unconstrained": lambda n: [str(t) for t in translator.translate(sources[:n], **search)],
        "constrained": lambda n: [
            str(t) for t in translator.translate(sources[:n], constraints=constraints[:n], **search)
        ],
    }
    for run in passes.values():
        run(WARMUP_SENTENCES)
    names = list(passes)
    outputs: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            output = passes[name](len(sources))
            seconds[name].append(time.perf_counter() - start)
            outputs.setdefault(name, output)
    return outputs, seconds


def terms_met(chosen: Sequence[Sequence[Term]], outputs: Sequence[str], kind: str | None = None) -> dict:
    """How many of the terms (of `kind`, or all) occur in their sentence's output on word boundaries."""
    hits = [
        occurs(t.text, out) for terms, out in zip(chosen, outputs) for t in terms if kind in (None, t.kind)
    ]
    return {"met": sum(hits), "terms": len(hits), "share": sum(hits) / len(hits) if hits else float("nan")}


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    import sacrebleu

    if not hypotheses:  # no sentence of the set got a term: nothing to score (sacrebleu needs one line)
        return {"bleu": float("nan"), "chrf": float("nan")}
    return {
        "bleu": sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score,
        "chrf": sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score,
    }


def evaluate(chosen: Sequence[Sequence[Term]], output: list[str], references: list[str]) -> dict:
    """Term shares and corpus scores of one pass's output."""
    constrained = [i for i, terms in enumerate(chosen) if terms]
    return {
        "terms": {kind or "all": terms_met(chosen, output, kind) for kind in (None, "rare", "name")},
        "all": corpus_scores(output, references),
        "constrained_sentences": corpus_scores(
            [output[i] for i in constrained], [references[i] for i in constrained]
        ),
    }


def measure(
    args: argparse.Namespace, chosen: list[list[Term]], sources: list[str], references: list[str]
) -> dict:
    import torch

    from seq2seq import Translator

    if args.threads:
        torch.set_num_threads(args.threads)
    translator = Translator.from_checkpoint(args.checkpoint)
    constraints = [[t.text for t in terms] for terms in chosen]
    load_before = load_average()
    outputs, seconds = timed_passes(
        translator, sources, constraints, args.beam_size, args.rounds, args.length_penalty
    )
    best = {name: min(values) for name, values in seconds.items()}
    options = translator.options.replace(beam_size=args.beam_size, length_penalty=args.length_penalty)
    return {
        "checkpoint": args.checkpoint,
        "search": f"{options.describe()}, length penalty {options.length_penalty:g}",
        "machine": describe_machine(),
        "load_average": {"before": load_before, "after": load_average()},
        "sentences": len(sources),
        "rounds": args.rounds,
        "seconds": seconds,
        "sentences_per_second": {name: len(sources) / s for name, s in best.items()},
        "time_ratio_constrained_over_unconstrained": best["constrained"] / best["unconstrained"],
        "results": {name: evaluate(chosen, output, references) for name, output in outputs.items()},
    }


def print_measurement(report: dict) -> None:
    machine = report["machine"]
    constrained_count = report["build"]["sentences"] - report["build"]["sentences_with_n_terms"][0]
    print(
        f"\n{report['sentences']} sentences ({constrained_count} with terms), {report['search']}; "
        f"{machine['cpu']}, {machine['capability']}, {machine['threads']} threads, torch {machine['torch']}; "
        f"load average {report['load_average']['before']} -> {report['load_average']['after']}"
    )
    print(
        "\n| pass | sentences/s | terms met | names met | rare met | BLEU | chrF "
        "| BLEU (with terms) | chrF (with terms) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for name, result in report["results"].items():
        terms = result["terms"]
        shares = " | ".join(
            f"{100 * terms[k]['share']:.1f}% ({terms[k]['met']}/{terms[k]['terms']})"
            for k in ("all", "name", "rare")
        )
        everything, subset = result["all"], result["constrained_sentences"]
        print(
            f"| {name} | {report['sentences_per_second'][name]:.2f} | {shares} | {everything['bleu']:.2f} "
            f"| {everything['chrf']:.2f} | {subset['bleu']:.2f} | {subset['chrf']:.2f} |"
        )
    ratio = report["time_ratio_constrained_over_unconstrained"]
    rounds = report["rounds"]
    print(f"\nconstrained / unconstrained time: {ratio:.2f} (best of {rounds} round{'s' * (rounds > 1)})")


# ----------------------------------------------------------------------------- main


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="data/bible_en_es", help="test.en, test.es and train.es are here")
    parser.add_argument(
        "--out",
        default="runs/terminology/test.constraints",
        help="the constraints file to write (one line per test sentence, tab-separated terms)",
    )
    parser.add_argument("--per-sentence", type=int, default=2, help="at most this many terms per sentence")
    parser.add_argument(
        "--rare",
        type=int,
        default=3,
        help="a lowercase word is rare with at most this many occurrences in train.es",
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="only the first N test sentences (the constraints file too)"
    )
    parser.add_argument("--build-only", action="store_true", help="write the constraints, measure nothing")
    parser.add_argument("--checkpoint", help="the model to measure (e.g. runs/.../averaged.pt)")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument(
        "--length-penalty", type=float, default=None, help="GNMT alpha of both passes (default: the model's)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds of both passes, alternating")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: torch's)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    if not args.build_only and not args.checkpoint:
        parser.error("--checkpoint is required (except with --build-only)")
    return args


def main() -> None:
    args = parse_arguments()
    data = Path(args.data)
    chosen = build(
        data / "test.es", data / "train.es", per_sentence=args.per_sentence, rare=args.rare, limit=args.limit
    )
    write_constraints(Path(args.out), chosen)
    summary = summarize(chosen, args.per_sentence)
    print(f"wrote {args.out}")
    print_summary(summary)
    if summary["terms_in_reference"] != summary["terms"]:
        raise SystemExit("some chosen terms do not occur in their reference on word boundaries")
    report: dict = {
        "build": summary,
        "options": {
            "per_sentence": args.per_sentence,
            "rare": args.rare,
            "limit": args.limit,
            "constraints": args.out,
        },
    }
    if not args.build_only:
        sources = read_lines(data / "test.en")[: args.limit]
        references = read_lines(data / "test.es")[: args.limit]
        report.update(measure(args, chosen, sources, references))
        print_measurement(report)
    report["terms"] = [[asdict(t) for t in terms] for terms in chosen]
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()

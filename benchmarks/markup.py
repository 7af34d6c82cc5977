#!/usr/bin/env python
"""Tag transfer on the Bible test set: does markup come back whole, well-formed and around the right
words, what does it cost in BLEU and speed? Built here, with a fixed seed, from the test verses:

1. Each source verse gets markup: a pair of tags (<b>, <i>, <a href=...>) around one to three consecutive
   words, sometimes a second pair nested in it, a placeholder ({0}, %s, ${name}) and a <br/> between
   words, each where a seeded draw puts it (every verse has at least one pair).
2. The verses are translated twice with the same model and search: plain (markup=false, on the verses
   without markup) and tagged (markup=auto). Reported, over the tagged outputs:
   - whole: every tag and placeholder of the source is in the output, once;
   - well-formed: the output parses as XML (every tagged source does);
   - placed: a pair surrounds exactly the output words that the reference aligner links to the words
     it surrounded in the source (the source-output word alignment: eflomal in both directions over
     the training corpus plus these pairs, symmetrized with grow-diag-final-and). The aligner's own
     errors bound this figure: it measures agreement with eflomal, not with a human;
   - BLEU / chrF of the tagged outputs with the markup removed, against the plain outputs' scores
     (goal: within 0.3 BLEU);
   - speed: seconds per test set, tagged / plain, best of --rounds interleaved rounds.

    python benchmarks/markup.py --checkpoint runs/quickstart/averaged.pt
    python benchmarks/markup.py --checkpoint ... --limit 200 --rounds 1      # a quick look

Needs the extras `alignment` (eflomal) and the Bible data of scripts/prepare_bible.sh.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import xml.dom.minidom
from pathlib import Path

from common import describe_machine, format_table, print_headline, set_threads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from seq2seq import Translator  # noqa: E402
from seq2seq.data.word_alignment import align_corpus, word_spans  # noqa: E402
from seq2seq.inference.markup import markup_pattern, parse_markup  # noqa: E402

TAGS = [("<b>", "</b>"), ("<i>", "</i>"), ('<a href="https://example.org/x">', "</a>")]
POINTS = ["{0}", "%s", "${name}", "<br/>"]


def tagged(line: str, rng: random.Random) -> tuple[str, dict[str, tuple[int, int]]]:
    """`line` with markup inserted between its words, and per pair (by its start tag) the range of words
    [first, end) it surrounds."""
    spans = word_spans(line)
    count = len(spans)
    first = rng.randrange(count)
    end = min(count, first + rng.randint(1, 3))
    outer = TAGS[rng.randrange(len(TAGS))]
    pairs = {outer: (first, end)}
    if end - first >= 2 and rng.random() < 0.3:
        inner = rng.randrange(first, end)
        pairs[next(tag for tag in TAGS if tag != outer)] = (inner, inner + 1)
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    for (start_tag, end_tag), (a, b) in pairs.items():
        opens.setdefault(a, []).append(start_tag)
        closes.setdefault(b - 1, []).insert(0, end_tag)
    points = {rng.randrange(count + 1): rng.choice(POINTS) for _ in range(rng.randint(0, 2))}
    out, position = [], 0
    for index, (start, stop) in enumerate(spans):
        out.append(line[position:start])
        if index in points:
            out.append(points[index] + " ")
        out.append("".join(opens.get(index, [])) + line[start:stop] + "".join(closes.get(index, [])))
        position = stop
    out.append(line[position:] + (" " + points[count] if count in points else ""))
    return "".join(out), {start_tag: span for (start_tag, _), span in pairs.items()}


INSERTED = re.compile(r"<[^>]*>|\{0\}|%s|\$\{name\}")
TOKENS = re.compile(r"(<[^>]*>)|\{0\}|%s|\$\{name\}|\w+|[^\w\s]")


def without_markup(text: str) -> str:
    """The text without the tags and placeholders this benchmark inserts (a verse's own numbers stay)."""
    return " ".join(INSERTED.sub(" ", text).split())


def output_pairs(text: str) -> dict[str, tuple[int, int]]:
    """Per start tag in `text`, the range of words [first, end) between it and its end tag (words as
    word_spans counts them in without_markup(text))."""
    opened: list[tuple[str, int]] = []
    found: dict[str, tuple[int, int]] = {}
    words = 0
    for token in TOKENS.finditer(text):
        tag = token.group(1)
        if tag is None:
            words += 0 if INSERTED.fullmatch(token.group()) else 1
        elif tag.startswith("</"):
            name = tag[2:-1]
            match = next(
                (i for i in range(len(opened) - 1, -1, -1) if opened[i][0][1:].startswith(name)), None
            )
            if match is not None:
                start_tag, first = opened.pop(match)
                found[start_tag] = (first, words)
        elif not tag.endswith("/>"):
            opened.append((tag, words))
    return found


def well_formed(text: str) -> bool:
    try:
        xml.dom.minidom.parseString(f"<root>{text}</root>")
    except Exception:  # any parse error: not well-formed
        return False
    return True


def placed(output: str, pairs: dict[str, tuple[int, int]], links: list[tuple[int, int]]) -> list[bool]:
    """Per pair of the source, whether the output's pair surrounds exactly the output words that the
    reference alignment links to its source words (from the first such word to the last; none: empty)."""
    got = output_pairs(output)
    results = []
    for start_tag, (a, b) in pairs.items():
        linked = sorted({t for s, t in links if a <= s < b})
        want = (linked[0], linked[-1] + 1) if linked else None
        span = got.get(start_tag)
        results.append(span is not None and (span == want or (want is None and span[0] == span[1])))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", default=str(ROOT / "runs/quickstart/averaged.pt"))
    parser.add_argument("--data", default=str(ROOT / "data/bible_en_es"))
    parser.add_argument("--limit", type=int, default=None, help="test verses (default: all)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--output", default=None, help="a JSON file for the results")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print(describe_machine(threads))
    data = Path(args.data)
    sources = (data / "test.en").read_text(encoding="utf-8").splitlines()[: args.limit]
    references = (data / "test.es").read_text(encoding="utf-8").splitlines()[: args.limit]
    rng = random.Random(args.seed)
    marked = [tagged(line, rng) for line in sources]
    lines = [line for line, _ in marked]
    translator = Translator.from_checkpoint(args.checkpoint)
    outputs: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = {"plain": [], "tagged": []}
    for round_index in range(args.rounds):
        order = [("plain", sources, "false"), ("tagged", lines, "auto")]
        for name, texts, markup in order if round_index % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            outputs[name] = [t.text for t in translator.translate(texts, beam_size=args.beam, markup=markup)]
            seconds[name].append(time.perf_counter() - start)
    report(args, sources, references, marked, outputs, seconds)


def report(args, sources, references, marked, outputs, seconds) -> None:
    import sacrebleu

    pattern = markup_pattern()
    tagged_out = outputs["tagged"]
    stripped = [without_markup(text) for text in tagged_out]
    whole = [
        sorted(e.text for e in parse_markup(line, pattern).elements)
        == sorted(e.text for e in parse_markup(out, pattern).elements)
        for (line, _), out in zip(marked, tagged_out)
    ]
    formed = [well_formed(out) for out in tagged_out]
    train = Path(args.data) / "train.en"
    corpus_src = train.read_text(encoding="utf-8").splitlines()
    corpus_tgt = train.with_suffix(".es").read_text(encoding="utf-8").splitlines()
    links = align_corpus(corpus_src + sources, corpus_tgt + stripped)[len(corpus_src) :]
    right = [
        ok for (_, pairs), out, link in zip(marked, tagged_out, links) for ok in placed(out, pairs, link)
    ]
    scores = {
        name: (
            sacrebleu.corpus_bleu(texts, [references]).score,
            sacrebleu.corpus_chrf(texts, [references]).score,
        )
        for name, texts in (("plain", outputs["plain"]), ("tagged, markup removed", stripped))
    }
    n = len(sources)
    rows = [
        ["verses", n, ""],
        ["whole (every element once)", f"{100 * sum(whole) / n:.1f}%", "goal 100%"],
        ["well-formed", f"{100 * sum(formed) / n:.1f}%", "goal 100%"],
        [
            "pairs placed as eflomal says",
            f"{100 * sum(right) / len(right):.1f}% of {len(right)}",
            "bounded by eflomal",
        ],
        *[[f"BLEU / chrF, {name}", f"{b:.2f} / {c:.2f}", ""] for name, (b, c) in scores.items()],
        [
            "seconds, plain / tagged (best round)",
            f"{min(seconds['plain']):.1f} / {min(seconds['tagged']):.1f}",
            "",
        ],
    ]
    print(format_table(["measure", "value", "note"], rows))
    gap = scores["plain"][0] - scores["tagged, markup removed"][0]
    ratio = min(seconds["tagged"]) / min(seconds["plain"])
    print_headline("markup: BLEU lost to tags", "plain text", f"{gap:+.2f} BLEU", "within 0.3")
    print(f"(load average at the end: {describe_machine(args.threads or 0).rsplit('load average ', 1)[1]})")
    print_headline("markup: tagged / plain seconds", "plain text", f"{ratio:.2f}x")
    if args.output:
        Path(args.output).write_text(
            json.dumps({"rows": rows, "bleu_gap": gap, "time_ratio": ratio}, indent=1)
        )


if __name__ == "__main__":
    main()

"""The embedded corpus: two Bible translations, verse-aligned, split by chapter.

``prepare_bible`` exports two SWORD modules (see sword.py), aligns their verses per book (see
alignment.py), drops what cannot be paired, splits by chapter and writes to ``out_dir``:

    {train,dev,test}.{lang}   one aligned text per line (a verse, or two where one text merges them)
    {train,dev,test}.ids      the references of each line, one column per language, tab-separated:
                              "Num.13.1<TAB>Num.13.2", "Num.13.32+Num.13.33<TAB>Num.13.33"
    dropped.tsv               every verse left out, with the reason
    stats.json                counts, words, drops by reason, re-paired verses by chapter, timings

The split is by chapter of the first language, so both directions share it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2seq.data.bible.alignment import Segment, align, fit_length_model
from seq2seq.data.bible.sword import BOOKS, Verse, ensure_modules, export_module
from seq2seq.data.corpus import normalize
from seq2seq.errors import UserError
from seq2seq.files import atomic_output

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
# Bump when the output for the same arguments changes, so an old prepared directory is rebuilt.
RECIPE_VERSION = 1
_CHAPTER_OFFSET = [sum(chapters for _, _, chapters in BOOKS[:book]) for book in range(len(BOOKS))]


@dataclass(frozen=True)
class VersePair:
    """Aligned text: one or two verses of each translation; ``chapter`` numbers the first verse's chapter."""

    refs: tuple[str, str]  # "Num.13.32+Num.13.33", "Num.13.33"
    texts: tuple[str, str]
    chapter: int


@dataclass(frozen=True)
class Drop:
    refs: tuple[str, str]  # "" on a side with no verse
    reason: str
    detail: str = ""


def chapter_number(book: int, chapter: int) -> int:
    """Canonical chapter number, counting from 0 (Genesis 1) to 1,188 (Revelation 22)."""
    return _CHAPTER_OFFSET[book] + chapter - 1


def split_of(chapter: int, *, modulus: int = 20, test: int = 10, dev: int = 0) -> str:
    """Every ``modulus``-th chapter goes to test and to dev, so both span every genre."""
    remainder = chapter % modulus
    return "test" if remainder == test else "dev" if remainder == dev else "train"


def align_translations(
    a: Sequence[Verse],
    b: Sequence[Verse],
    *,
    names: tuple[str, str],
    a_keys: Mapping[str, frozenset[str]] | None = None,
    max_length_z: float = 6.0,
) -> tuple[list[VersePair], list[Drop], Counter[str]]:
    """Pair the verses of two translations book by book.

    ``a_keys`` replaces a's own Strong's numbers by reference (the WEB tags words by Hebrew verse
    numbering, so in Gen 32, Ps 89 and others its tags sit one verse off its own text; the KJV's
    tags do not). Returns the pairs, the drops and counts of merged and re-paired verses.
    """
    b_by_ref = {v.ref: v for v in b}
    same_ref = [(len(v.text), len(b_by_ref[v.ref].text)) for v in a if v.ref in b_by_ref]
    model = fit_length_model([n for n, _ in same_ref], [n for _, n in same_ref])
    log.info("length model: %s", model)
    pairs: list[VersePair] = []
    drops: list[Drop] = []
    notes: Counter[str] = Counter()
    for book in range(len(BOOKS)):
        a_book = [v for v in a if v.book == book]
        b_book = [v for v in b if v.book == book]
        a_segments = [
            Segment(v.ref, len(v.text), a_keys.get(v.ref, frozenset()) if a_keys else v.strongs)
            for v in a_book
        ]
        b_segments = [Segment(v.ref, len(v.text), v.strongs) for v in b_book]
        book_drops = []
        for bead in align(a_segments, b_segments, model=model):
            outcome = _outcome(
                [a_book[i] for i in bead.a], [b_book[j] for j in bead.b], bead.z, names, max_length_z
            )
            if isinstance(outcome, Drop):
                book_drops.append(outcome)
                continue
            pairs.append(outcome)
            if "+" in "".join(outcome.refs):
                notes["merged"] += 1
            elif outcome.refs[0] != outcome.refs[1]:
                notes["re-paired"] += 1
                notes[f"re-paired in {outcome.refs[0].rsplit('.', 1)[0]}"] += 1
        drops.extend(_merge_opposite_skips(book_drops))
    return pairs, drops, notes


def _outcome(
    a_verses: list[Verse], b_verses: list[Verse], z: float, names: tuple[str, str], max_length_z: float
) -> VersePair | Drop:
    refs = ("+".join(v.ref for v in a_verses), "+".join(v.ref for v in b_verses))
    if not a_verses or not b_verses:
        side = 0 if a_verses else 1
        verse = (a_verses or b_verses)[0]
        return Drop(
            refs, f"empty in {names[side]}" if not verse.text else f"no counterpart in {names[1 - side]}"
        )
    if abs(z) > max_length_z:
        return Drop(refs, "length mismatch", f"z={z:+.1f}")
    texts = (normalize(" ".join(v.text for v in a_verses)), normalize(" ".join(v.text for v in b_verses)))
    return VersePair(refs, texts, chapter_number(a_verses[0].book, a_verses[0].chapter))


def _merge_opposite_skips(drops: list[Drop]) -> list[Drop]:
    """One drop, not two, for a verse that is empty on one side and has text on the other."""
    merged: list[Drop] = []
    for drop in drops:
        this, last = _skipped(drop), _skipped(merged[-1]) if merged else None
        if this and last and this[0] != last[0] and this[1] == last[1]:
            reason = drop.reason if drop.reason.startswith("empty") else merged[-1].reason
            merged[-1] = Drop((this[1], this[1]), reason)
        else:
            merged.append(drop)
    return merged


def _skipped(drop: Drop) -> tuple[int, str] | None:
    """(side, reference) of a verse left without a partner, None for other drops."""
    if drop.refs[0] and not drop.refs[1]:
        return 0, drop.refs[0]
    if drop.refs[1] and not drop.refs[0]:
        return 1, drop.refs[1]
    return None


def recipe_fingerprint(
    *,
    modules: Mapping[str, str],
    strongs_from: Mapping[str, str] | None = None,
    split: Mapping[str, int] | None = None,
    max_length_z: float = 6.0,
) -> tuple[dict[str, Any], str]:
    """The arguments that decide a corpus (prepare_bible's, with the split rule's defaults filled in and
    the recipe's version) and their fingerprint, which stats.json records: a directory holding the
    corpus of the same fingerprint is kept as it is."""
    split_rule = {"modulus": 20, "test": 10, "dev": 0, **(split or {})}
    arguments = {"modules": dict(modules), "strongs_from": dict(strongs_from or {}), "split": split_rule,
                 "max_length_z": max_length_z, "version": RECIPE_VERSION}  # fmt: skip
    return arguments, hashlib.sha256(json.dumps(arguments, sort_keys=True).encode()).hexdigest()[:16]


def prepare_bible(
    *,
    out_dir: str | Path,
    modules: Mapping[str, str],
    packages: Mapping[str, str],
    strongs_from: Mapping[str, str] | None = None,
    split: Mapping[str, int] | None = None,
    max_length_z: float = 6.0,
    install_missing: bool = True,
    diatheke: str = "diatheke",
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Build the verse-aligned corpus in ``out_dir``; returns the statistics also written to stats.json.

    ``modules`` maps two language codes to SWORD modules, the first being the one whose chapter
    numbers decide the split; ``strongs_from`` maps the first language to a module whose Strong's
    numbers (by reference) replace its own during alignment. Does nothing when ``out_dir``
    already holds a corpus made by the same arguments, unless ``force``.
    """
    langs = _languages(modules, strongs_from or {})
    out = Path(out_dir)
    arguments, fingerprint = recipe_fingerprint(
        modules=modules, strongs_from=strongs_from, split=split, max_length_z=max_length_z
    )
    split_rule = arguments["split"]
    if not force and _already_prepared(out, langs, fingerprint):
        log.info("%s already holds this corpus (fingerprint %s); force=true rebuilds it", out, fingerprint)
        return json.loads((out / "stats.json").read_text(encoding="utf-8"))
    needed = list(dict.fromkeys([*modules.values(), *(strongs_from or {}).values()]))
    ensure_modules(needed, packages=dict(packages), diatheke=diatheke, install=install_missing)
    started = time.perf_counter()
    first, second, keys = _export(modules, langs, strongs_from, diatheke=diatheke, progress=progress)
    export_seconds = time.perf_counter() - started
    names = (modules[langs[0]], modules[langs[1]])
    pairs, drops, notes = align_translations(
        first, second, names=names, a_keys=keys, max_length_z=max_length_z
    )
    by_split: dict[str, list[VersePair]] = {name: [] for name in SPLITS}
    for pair in pairs:
        by_split[split_of(pair.chapter, **split_rule)].append(pair)
    stats = {"fingerprint": fingerprint, "arguments": arguments, **_statistics(by_split, drops, notes, langs)}
    stats["export_seconds"] = round(export_seconds, 1)
    stats["total_seconds"] = round(time.perf_counter() - started, 1)
    _write_corpus(out, langs, by_split, drops, stats)
    return stats


def _export(
    modules: Mapping[str, str], langs: tuple[str, str], strongs_from: Mapping[str, str] | None, *,
    diatheke: str, progress: bool,
) -> tuple[list[Verse], list[Verse], dict[str, frozenset[str]] | None]:  # fmt: skip
    """Both translations, and the Strong's numbers by reference that replace the first one's own."""
    first, second = (export_module(modules[lang], diatheke=diatheke, progress=progress) for lang in langs)
    if not strongs_from:
        return first, second, None
    lender = export_module(strongs_from[langs[0]], diatheke=diatheke, progress=progress)
    return first, second, {v.ref: v.strongs for v in lender}


def _languages(modules: Mapping[str, str], strongs_from: Mapping[str, str]) -> tuple[str, str]:
    langs = tuple(modules)
    if len(langs) != 2:
        raise UserError(f"the Bible recipe needs exactly two modules (language: module), got {dict(modules)}")
    if set(strongs_from) - {langs[0]}:
        raise UserError(
            f"strongs_from may only name the first language ({langs[0]}), got {dict(strongs_from)}"
        )
    return langs[0], langs[1]


def _already_prepared(out: Path, langs: tuple[str, ...], fingerprint: str) -> bool:
    try:
        stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    files = [out / f"{name}.{ext}" for name in SPLITS for ext in (*langs, "ids")]
    return stats.get("fingerprint") == fingerprint and all(f.is_file() for f in files)


def _statistics(
    by_split: Mapping[str, list[VersePair]], drops: list[Drop], notes: Counter[str], langs: tuple[str, str]
) -> dict[str, Any]:
    words = {
        lang: {name: sum(len(p.texts[side].split()) for p in pairs) for name, pairs in by_split.items()}
        for side, lang in enumerate(langs)
    }
    for counts in words.values():
        counts["total"] = sum(counts.values())
    pairs = {name: len(items) for name, items in by_split.items()}
    pairs["total"] = sum(pairs.values())
    re_paired = {
        key.split(" in ", 1)[1]: n for key, n in sorted(notes.items()) if key.startswith("re-paired in ")
    }
    return {
        "ids_columns": list(langs),
        "pairs": pairs,
        "words": words,
        "dropped": dict(Counter(d.reason for d in drops).most_common()),
        "dropped_total": len(drops),
        "merged_pairs": notes["merged"],
        "re_paired_verses": notes["re-paired"],
        "re_paired_by_chapter": re_paired,
    }


def _write_corpus(
    out: Path,
    langs: tuple[str, str],
    by_split: Mapping[str, list[VersePair]],
    drops: list[Drop],
    stats: dict[str, Any],
) -> None:
    """Write every file through a temporary name; stats.json last, as the mark of a complete corpus."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "stats.json").unlink(missing_ok=True)
    for name, pairs in by_split.items():
        for side, lang in enumerate(langs):
            _write_lines(out / f"{name}.{lang}", [p.texts[side] for p in pairs])
        _write_lines(out / f"{name}.ids", ["\t".join(p.refs) for p in pairs])
    _write_lines(
        out / "dropped.tsv",
        ["\t".join((*langs, "reason", "detail"))] + ["\t".join((*d.refs, d.reason, d.detail)) for d in drops],
    )
    _write_lines(out / "stats.json", [json.dumps(stats, indent=2, ensure_ascii=False)])
    counts = stats["pairs"]
    log.info(
        "wrote %s: %d pairs (train %d, dev %d, test %d); dropped %d (%s), listed in dropped.tsv",
        out,
        counts["total"],
        counts["train"],
        counts["dev"],
        counts["test"],
        stats["dropped_total"],
        ", ".join(f"{n} {reason}" for reason, n in stats["dropped"].items()),
    )


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    with atomic_output(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(line + "\n" for line in lines)

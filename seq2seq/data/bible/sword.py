"""Read the verses of installed SWORD Bible modules with ``diatheke``.

One range query per module is several times faster than one call per book (each call loads the
module again), even though diatheke then repeats the last Psalm title before every later verse,
which inflates the WEB export several times over. Only the 66 books of the Protestant
canon are kept: they are the books the RV1909 has, and the 1,189 chapters the split rule numbers.
"""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from tqdm import tqdm

from seq2seq.data.bible.markup import (
    clean_markup,
    restore_chapter_case,
    strip_leading_caps_word,
    strip_subscription,
)
from seq2seq.errors import UserError

log = logging.getLogger(__name__)

# (OSIS id, name diatheke prints with "-l en", number of chapters) in canonical order: 929 + 260 = 1,189.
# fmt: off
BOOKS: tuple[tuple[str, str, int], ...] = (
    ("Gen", "Genesis", 50), ("Exod", "Exodus", 40), ("Lev", "Leviticus", 27), ("Num", "Numbers", 36),
    ("Deut", "Deuteronomy", 34), ("Josh", "Joshua", 24), ("Judg", "Judges", 21), ("Ruth", "Ruth", 4),
    ("1Sam", "I Samuel", 31), ("2Sam", "II Samuel", 24), ("1Kgs", "I Kings", 22), ("2Kgs", "II Kings", 25),
    ("1Chr", "I Chronicles", 29), ("2Chr", "II Chronicles", 36), ("Ezra", "Ezra", 10),
    ("Neh", "Nehemiah", 13), ("Esth", "Esther", 10), ("Job", "Job", 42), ("Ps", "Psalms", 150),
    ("Prov", "Proverbs", 31), ("Eccl", "Ecclesiastes", 12), ("Song", "Song of Solomon", 8),
    ("Isa", "Isaiah", 66), ("Jer", "Jeremiah", 52), ("Lam", "Lamentations", 5), ("Ezek", "Ezekiel", 48),
    ("Dan", "Daniel", 12), ("Hos", "Hosea", 14), ("Joel", "Joel", 3), ("Amos", "Amos", 9),
    ("Obad", "Obadiah", 1), ("Jonah", "Jonah", 4), ("Mic", "Micah", 7), ("Nah", "Nahum", 3),
    ("Hab", "Habakkuk", 3), ("Zeph", "Zephaniah", 3), ("Hag", "Haggai", 2), ("Zech", "Zechariah", 14),
    ("Mal", "Malachi", 4), ("Matt", "Matthew", 28), ("Mark", "Mark", 16), ("Luke", "Luke", 24),
    ("John", "John", 21), ("Acts", "Acts", 28), ("Rom", "Romans", 16), ("1Cor", "I Corinthians", 16),
    ("2Cor", "II Corinthians", 13), ("Gal", "Galatians", 6), ("Eph", "Ephesians", 6),
    ("Phil", "Philippians", 4), ("Col", "Colossians", 4), ("1Thess", "I Thessalonians", 5),
    ("2Thess", "II Thessalonians", 3), ("1Tim", "I Timothy", 6), ("2Tim", "II Timothy", 4),
    ("Titus", "Titus", 3), ("Phlm", "Philemon", 1), ("Heb", "Hebrews", 13), ("Jas", "James", 5),
    ("1Pet", "I Peter", 5), ("2Pet", "II Peter", 3), ("1John", "I John", 5), ("2John", "II John", 1),
    ("3John", "III John", 1), ("Jude", "Jude", 1), ("Rev", "Revelation of John", 22),
)
# fmt: on
_BOOK_BY_NAME = {name: index for index, (_, name, _) in enumerate(BOOKS)}

# The verse key diatheke prints: "Genesis 1:1: ", possibly after pre-verse markup such as a Psalm title.
_KEY = re.compile(r"(?:^|>)\s*(?P<book>[^<>:]*?[^\s<>:]) (?P<chapter>\d+):(?P<verse>\d+): ")
_STRONGS_ATTRIBUTE = re.compile(r'\b(?:savlm|lemma)="([^"]*)"')
_STRONGS_NUMBER = re.compile(r"\b(?:strong:)?([GH])0*(\d+)[a-z]?\b")
_MODULE_LINE = re.compile(r"\(\w+\)")
_CANONICAL_TITLE = re.compile(r'<title\b[^>]*\bcanonical="true"[^>]*>(.*?)</title\s*>', re.DOTALL)


@dataclass(frozen=True)
class Verse:
    """One verse of one module; ``book`` indexes BOOKS; ``strongs`` are the Strong's numbers tagged in it."""

    book: int
    chapter: int
    verse: int
    text: str
    strongs: frozenset[str] = frozenset()

    @property
    def ref(self) -> str:
        return f"{BOOKS[self.book][0]}.{self.chapter}.{self.verse}"


def ensure_modules(
    modules: Sequence[str], *, packages: dict[str, str], diatheke: str = "diatheke", install: bool = True
) -> None:
    """Make sure diatheke and the modules exist, installing the Debian packages as root if allowed."""
    missing = _missing_modules(modules, diatheke)
    if not missing:
        return
    unknown = [m for m in missing if m not in packages]
    if unknown:
        raise UserError(
            f"SWORD modules {', '.join(unknown)} are not installed and no Debian package is known for them; "
            "install them, or name their packages in data.recipe.packages"
        )
    needed = ["diatheke"] + sorted({packages[m] for m in missing})
    can_install = install and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if not can_install:
        raise UserError(
            f"SWORD modules {', '.join(missing)} are not installed; install them with: "
            f"sudo apt-get install {' '.join(needed)}"
        )
    log.info("installing Debian packages: %s", " ".join(needed))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *needed]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise UserError(f"'{' '.join(command)}' failed ({tail}); install {' '.join(needed)} by hand")
    still_missing = _missing_modules(modules, diatheke)
    if still_missing:
        raise UserError(
            f"SWORD modules {', '.join(still_missing)} are still missing after installing "
            f"{' '.join(needed)}; check the module names in the data config"
        )


def _missing_modules(modules: Sequence[str], diatheke: str) -> list[str]:
    if shutil.which(diatheke) is None:
        return list(modules)
    listing = _run_diatheke(diatheke, ["-b", "system", "-k", "modulelist"])
    installed = {line.split(" : ")[0].strip() for line in listing.splitlines() if " : " in line}
    return [m for m in modules if m not in installed]


def _run_diatheke(diatheke: str, args: list[str]) -> str:
    result = subprocess.run([diatheke, *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise UserError(
            f"diatheke {' '.join(args)} failed with exit code {result.returncode}: "
            f"{result.stderr.decode('utf-8', 'replace').strip()[:200]}"
        )
    return result.stdout.decode("utf-8", "replace")


def export_module(module: str, *, diatheke: str = "diatheke", progress: bool = True) -> list[Verse]:
    """All verses of the 66 books, markup stripped, in canonical order (empty verses kept).

    One range query per module, read as it streams (seconds per module); verses of books
    outside the 66 (the WEB's deuterocanon) are skipped and counted in the log.
    """
    command = [diatheke, "-b", module, "-f", "internal", "-o", "f", "-l", "en", "-k", "Gen 1:1-Rev 22:21"]
    raw: list[tuple[int, int, int, str]] = []
    skipped_verses = 0
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        bar = tqdm(total=len(BOOKS), desc=f"export {module}", unit="book", disable=not progress)
        for key, body in _verse_lines(io.TextIOWrapper(process.stdout, encoding="utf-8", errors="replace")):
            book = _BOOK_BY_NAME.get(key[0])
            if book is None:
                skipped_verses += 1
                continue
            if not raw or raw[-1][0] != book:
                bar.update(1)
            raw.append((book, key[1], key[2], body))
        bar.close()
        error = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
    if process.returncode != 0 or not raw:
        raise UserError(
            f"diatheke could not export module {module} (exit code {process.returncode}): "
            f"{error.strip()[:200] or 'no verses'}; is it an installed Bible module?"
        )
    if skipped_verses:
        log.info("%s: skipped %d verses outside the 66-book canon", module, skipped_verses)
    verses = [Verse(b, c, v, clean_markup(text), strongs_numbers(text)) for b, c, v, text in raw]
    verses = [_strip_acrostic(v) for v in verses]
    verses = [
        replace(v, text=strip_subscription(v.text)) if last else v
        for v, last in zip(verses, _is_last_of_book(verses))
    ]
    texts = restore_chapter_case([v.text for v in verses], [v.verse == 1 for v in verses])
    return [replace(v, text=t) for v, t in zip(verses, texts)]


def _is_last_of_book(verses: Sequence[Verse]) -> list[bool]:
    """True for the last verse with text of each book."""
    last: dict[int, int] = {v.book: k for k, v in enumerate(verses) if v.text}
    return [last.get(v.book) == k for k, v in enumerate(verses)]


def _verse_lines(lines: Iterable[str]) -> Iterator[tuple[tuple[str, int, int], str]]:
    """(book name, chapter, verse) and raw markup of each verse in diatheke's output.

    A canonical title in the markup before a verse key (a Psalm title) belongs to the first verse
    it precedes; diatheke repeats it before every following verse, so a repeated one is ignored.
    A line without a key continues the previous verse; the final "(module)" line is not text.
    """
    key: tuple[str, int, int] | None = None
    body = ""
    previous_prefix = ""
    for line in lines:
        line = line.rstrip("\n")
        match = _KEY.search(line)
        if match is None:
            if key is not None and line.strip() and not _MODULE_LINE.fullmatch(line.strip()):
                body += "\n" + line
            continue
        if key is not None:
            yield key, body
        prefix, body = line[: match.start()], line[match.end() :]
        if prefix != previous_prefix:
            titles = " ".join(_CANONICAL_TITLE.findall(prefix))
            body = f"{titles} {body}" if titles else body
        previous_prefix = prefix
        key = (match["book"], int(match["chapter"]), int(match["verse"]))
    if key is not None:
        yield key, body


def _strip_acrostic(verse: Verse) -> Verse:
    """Psalm 119 opens every 8th verse with a Hebrew letter name (a title in WEB, text in RV1909)."""
    if BOOKS[verse.book][0] == "Ps" and verse.chapter == 119 and verse.verse % 8 == 1:
        return replace(verse, text=strip_leading_caps_word(verse.text))
    return verse


def strongs_numbers(raw: str) -> frozenset[str]:
    """Strong's numbers of the words in raw verse markup, normalised ("strong:H0430" -> "H430")."""
    numbers = set()
    for attribute in _STRONGS_ATTRIBUTE.findall(raw):
        numbers.update(letter + digits for letter, digits in _STRONGS_NUMBER.findall(attribute))
    return frozenset(numbers)

"""Glossaries: source terms that turn into lexical constraints on the translation of each sentence.

`glossary=FILE.tsv` lists one term pair a line, `source term<TAB>target term`, in UTF-8 (a leading byte
order mark is allowed). Blank lines and lines whose first non-blank character is `#` are skipped; every
other line holds exactly one tab and text on both sides of it. Whitespace around a term is dropped and a
run of whitespace inside one counts as one space. The same pair may be listed twice (it is kept once),
but one source term given two different target terms is an error, as is a file with no entries. Every
mistake is a one-line `UserError` that names the file and the line.

For each source sentence, `Glossary.constraints` returns the target terms of the source terms found in
it, in order of their first occurrence in the sentence, each target term once. A source term is found
where it occurs in the sentence under these rules:

- Word boundaries: the occurrence is neither preceded nor followed by a letter, digit or underscore
  (Python's `\\w`), so "Lord" is not found in "Lordship" but "God" is found in "God's" and "(God)".
  A letter of a script written without spaces (Chinese, Japanese, Thai, ...: seq2seq.decode.spaceless)
  has a boundary on both sides, so "神" is found in "神说" and "Lord" in "的Lord说".
- Smart case: a term written all in lowercase matches in any case ("lord" matches "Lord" and "LORD");
  a term with an uppercase letter matches only as written ("LORD" matches "LORD" alone, "Paul" does not
  match "paul").
- Whitespace: a space in a term matches any run of whitespace in the sentence ("Lord God" matches
  "Lord  God" and a tab between the two words).
- Overlaps: the sentence is read left to right and the leftmost occurrence is taken first; of the terms
  that start at one position the longest wins, and a term written with uppercase letters wins over an
  all-lowercase term of the same length. Occurrences do not overlap: with "Lord God" -> "Señor Dios" and
  "Lord" -> "Señor", "the Lord God said" gives only "Señor Dios", while a separate "Lord" elsewhere in
  the sentence still adds "Señor".
- Unicode: source terms and sentences are compared in NFC form, so a precomposed "á" and an "a" followed
  by a combining accent are the same letter.

The terms are compiled once, at construction, into two regular expressions (the all-lowercase terms and
the others), each a trie that tries longer continuations before a shorter term ends; a sentence costs
one or two regex searches per occurrence, however many terms the glossary holds.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from seq2seq.decode.spaceless import SPACELESS_CLASS
from seq2seq.errors import UserError

__all__ = ["Glossary"]

LINE_FORMAT = '"source term<TAB>target term"'
SPACE = " "  # the trie key of a whitespace run: terms hold no other whitespace after normalising
# A boundary: no word character on the other side, or a letter written without spaces on either side.
WORD_START = rf"(?:(?<!\w)|(?<=[{SPACELESS_CLASS}])|(?=[{SPACELESS_CLASS}]))"
WORD_END = rf"(?:(?!\w)|(?=[{SPACELESS_CLASS}])|(?<=[{SPACELESS_CLASS}]))"


class Glossary:
    """Source terms and the target terms they become constraints for (the rules: the module docstring)."""

    def __init__(self, entries: Sequence[tuple[str, str]]) -> None:
        rows = [(f"entry {number}", source, target) for number, (source, target) in enumerate(entries, 1)]
        self.entries: tuple[tuple[str, str], ...] = unique_entries(rows, "glossary")
        self._matchers = compile_matchers([source for source, _ in self.entries])

    @classmethod
    def load(cls, path: str | Path) -> Glossary:
        """Read a `source term<TAB>target term` file; any mistake is a UserError naming the line."""
        entries = unique_entries(parse_lines(read_text(Path(path)), str(path)), str(path))
        if not entries:
            raise UserError(f"glossary {path} has no entries; add lines {LINE_FORMAT}")
        return cls(entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Glossary({len(self.entries)} entries)"

    def constraints(self, text: str) -> list[str]:
        """The target terms whose source terms occur in `text`, in order of first occurrence, each once."""
        targets = (self.entries[term][1] for term in self._terms_in(unicodedata.normalize("NFC", text)))
        return list(dict.fromkeys(targets))

    def _terms_in(self, text: str) -> Iterator[int]:
        """The entry indexes of the occurrences in `text`: leftmost first, then longest, never overlapping.

        Each matcher keeps its next occurrence until the chosen one passes its start; at a tie in start
        and end the first matcher (the terms with uppercase letters) wins.
        """
        found = [matcher.pattern.search(text) for matcher in self._matchers]
        while any(found):
            best = min((hit for hit in found if hit), key=lambda hit: (hit.start(), -hit.end()))
            yield self._matchers[found.index(best)].terms[best.lastindex - 1]
            end = best.end()
            found = [
                hit if hit is None or hit.start() >= end else matcher.pattern.search(text, end)
                for hit, matcher in zip(found, self._matchers)
            ]


class Matcher(NamedTuple):
    pattern: re.Pattern[str]
    terms: tuple[int, ...]  # the entry index of each capturing group, in group order


class TrieNode:
    """One prefix of the terms: its continuations, keyed by unit, and the entry that ends here, if any."""

    __slots__ = ("children", "term")

    def __init__(self) -> None:
        self.children: dict[str, tuple[str, TrieNode]] = {}  # unit key -> (unit regex, node)
        self.term: int | None = None


def read_text(path: Path) -> str:
    if path.is_dir():
        raise UserError(f"glossary {path} is a directory; give the path of a {LINE_FORMAT} .tsv file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"glossary {path} does not exist; check the path") from None
    except OSError as error:
        raise UserError(f"glossary {path} cannot be read ({error.strerror}); check its permissions") from None
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UserError(f"{path} line {line}: not valid UTF-8; save the glossary as UTF-8") from None


def parse_lines(text: str, where: str) -> Iterator[tuple[str, str, str]]:
    """(label, source, target) for each entry line; blank and `#` lines are skipped."""
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.rstrip("\r").split("\t")
        if len(fields) != 2:
            raise UserError(f"{where} line {number}: expected {LINE_FORMAT}, found {fields_problem(fields)}")
        yield f"line {number}", fields[0], fields[1]


def fields_problem(fields: Sequence[str]) -> str:
    if len(fields) == 1:
        return "1 field; separate the source and target term with a tab (not spaces)"
    return f"{len(fields)} fields; put exactly one tab on the line, between the source and the target term"


def unique_entries(rows: Iterable[tuple[str, str, str]], where: str) -> tuple[tuple[str, str], ...]:
    """Normalised (source, target) pairs in first-seen order, each once; one source term may have one target.

    `rows` holds (label, source, target), the label ("line 3", "entry 3") naming the row in errors.
    """
    first: dict[str, tuple[str, str]] = {}  # source term -> (target term, label of its first row)
    for label, raw_source, raw_target in rows:
        source, target = normalise_source(raw_source), squeeze(raw_target)
        for side, term in (("source", source), ("target", target)):
            if not term:
                raise UserError(f"{where} {label}: the {side} term is empty; write {LINE_FORMAT}")
        known_target, known_label = first.setdefault(source, (target, label))
        if known_target != target:
            raise UserError(
                f'{where} {label}: source term "{source}" has target "{target}" here but "{known_target}" on '
                f"{known_label}; keep one of the two"
            )
    return tuple((source, target) for source, (target, _) in first.items())


def squeeze(term: str) -> str:
    """`term` without surrounding whitespace, each inner run of whitespace one space."""
    return " ".join(term.split())


def normalise_source(term: str) -> str:
    return squeeze(unicodedata.normalize("NFC", term))


def is_smart_case(term: str) -> bool:
    """An all-lowercase term (or one without cased letters) matches in any case."""
    return term == term.lower()


def compile_matchers(sources: Sequence[str]) -> list[Matcher]:
    """The case-sensitive matcher first (it wins ties), then the case-insensitive one; empty ones left out."""
    exact = [index for index, term in enumerate(sources) if not is_smart_case(term)]
    folded = [index for index, term in enumerate(sources) if is_smart_case(term)]
    matchers = [compile_matcher(sources, exact, fold=False), compile_matcher(sources, folded, fold=True)]
    return [matcher for matcher in matchers if matcher.terms]


def compile_matcher(sources: Sequence[str], indexes: Sequence[int], fold: bool) -> Matcher:
    root = TrieNode()
    for index in indexes:
        node = root
        for key, regex in term_units(sources[index], fold):
            node = node.children.setdefault(key, (regex, TrieNode()))[1]
        node.term = index
    terms: list[int] = []
    body = trie_regex(root, terms) if indexes else ""
    pattern = re.compile(rf"{WORD_START}{body}{WORD_END}", re.IGNORECASE if fold else 0)
    return Matcher(pattern, tuple(terms))


def term_units(term: str, fold: bool) -> Iterator[tuple[str, str]]:
    """(trie key, regex) for each character of a normalised term; a space stands for a whitespace run.

    Folded keys put the characters that match each other ignoring case ("s", "ſ") in one trie branch, so
    the branches of a node never match the same text and the first full match is the longest.
    """
    for char in term:
        if char == SPACE:
            yield SPACE, r"\s+"
        else:
            yield (fold_char(char) if fold else char), re.escape(char)


def fold_char(char: str) -> str:
    folded = char.casefold()
    return folded if len(folded) == 1 else char


def trie_regex(node: TrieNode, terms: list[int]) -> str:
    """The regex of the terms below `node`: its continuations first, then an empty group where a term ends.

    Appends the entry index of each group to `terms` in the order the groups appear in the regex, so a
    match's `lastindex` names its entry. Runs of single-child nodes are written without a group.
    """
    chain = []
    while len(node.children) == 1 and node.term is None:
        regex, node = next(iter(node.children.values()))
        chain.append(regex)
    branches = [regex + trie_regex(child, terms) for regex, child in node.children.values()]
    if node.term is not None:
        terms.append(node.term)
        branches.append("()")
    tail = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return "".join(chain) + tail

"""Turn SWORD "internal" (OSIS-like) verse markup into clean plain text.

``diatheke -f plain`` is not usable for a corpus: it deletes footnotes without leaving a space
("Godcreated"), glues the RV1909's added words to their neighbours ("Y FUÉqueá") and prints
Strong's numbers as text ("vida <H2416>"). We ask for ``-f internal -o f`` instead, so every
footnote, line break and added-word span is still visible as a tag, and decide here where a
removed tag has to leave a space.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

# A removed tag becomes this marker; _resolve_soft_breaks turns it into a space or nothing.
_SOFT = "\x00"
# Everything after the end of a chapter or book is not verse text (WEB appends its glossary to Rev 22:21).
_END_OF_TEXT = re.compile(r'<chapter\b[^>]*\beID=|<div\b[^>]*\btype="(?:book|glossary|introduction)"')
# Elements whose content is not translation text: footnotes, speaker labels, in-verse headings.
_DROPPED_ELEMENTS = re.compile(r"<(note|speaker|title)\b[^>]*>.*?</\1\s*>|<note\b[^>]*/>", re.DOTALL)
# Word-level tags that wrap parts of one run of text; removing them never separates words.
_INLINE_TAGS = re.compile(r"</?(?:w|divineName|name|hi|foreign|seg|rdg|catchWord)\b[^>]*>")
_ADDED_WORDS = re.compile(r"<transChange\b[^>]*>(.*?)</transChange\s*>", re.DOTALL)
_ANY_TAG = re.compile(r"<[^>]*>")
_SOFT_RUN = re.compile(r"[\x00\s]+")
_SPACES = re.compile(r"\s+")
_CLOSING = set(".,;:!?)]}”’»…")
_OPENING = set("([{“‘«¡¿")
# Spanish object pronouns that the RV1909 marks as added words but writes attached to the verb
# ("oyéndo<added>lo</added>" is "oyéndolo").
_ENCLITICS = {"lo", "la", "los", "las", "le", "les", "me", "te", "se", "nos", "os"}
_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+)[¡¿“‘(]*$")


def clean_markup(raw: str) -> str:
    """Plain text of one verse: tags removed, words kept apart where markup separated them."""
    text = _END_OF_TEXT.split(raw, maxsplit=1)[0]
    text = _DROPPED_ELEMENTS.sub(_SOFT, text)
    text = _INLINE_TAGS.sub("", text)
    text = _ADDED_WORDS.sub(_mark_added_words, text)
    text = _ANY_TAG.sub(_SOFT, text)
    text = text.replace("¶", " ")  # the KJV's paragraph marks
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    return _SPACES.sub(" ", _resolve_soft_breaks(text)).strip()


def _mark_added_words(match: re.Match[str]) -> str:
    words = match.group(1)
    before = match.string[: match.start()]
    glued_to_verb = words in _ENCLITICS and before[-1:].islower()
    return ("" if glued_to_verb else _SOFT) + words + _SOFT


def _resolve_soft_breaks(text: str) -> str:
    """A removed tag separates two words unless punctuation or real whitespace already does."""

    def replace(match: re.Match[str]) -> str:
        if any(char != _SOFT for char in match.group(0)):
            return " "  # the run contains real whitespace
        left = text[match.start() - 1] if match.start() > 0 else " "
        right = text[match.end()] if match.end() < len(text) else " "
        if left.isspace() or right.isspace() or left in _OPENING or right in _CLOSING:
            return ""
        return " "

    return _SOFT_RUN.sub(replace, text)


def restore_chapter_case(texts: list[str], first_verse: list[bool]) -> list[str]:
    """Undo the printed-edition habit of setting each chapter's first word in capitals.

    The RV1909 starts every chapter with "EN el principio", "Y FUÉ", "¡OH Jehová". Only a module
    that does this in most chapters is touched, and only the first all-capitals word of each
    chapter's first verse: at a sentence start it becomes "En"; elsewhere it takes the casing the
    word has most often in the rest of the module ("Y fué", but "Y Ezechîas").
    """
    openers = [_first_caps_word(t) for t, first in zip(texts, first_verse) if first]
    if not openers or sum(m is not None and m.start() <= 2 for m in openers) < 0.5 * len(openers):
        return list(texts)
    casing = _word_casing(t for t, first in zip(texts, first_verse) if not first)
    fixed = []
    for text, first in zip(texts, first_verse):
        match = _first_caps_word(text) if first else None
        if match is None:
            fixed.append(text)
            continue
        word = match.group(0)
        if _SENTENCE_START.search(text[: match.start()]):
            new = word[0] + word[1:].lower()
        else:
            new = casing.get(word.lower(), word[0] + word[1:].lower())
        fixed.append(text[: match.start()] + new + text[match.end() :])
    return fixed


def _first_caps_word(text: str) -> re.Match[str] | None:
    for match in _WORD.finditer(text):
        if len(match.group(0)) >= 2 and match.group(0).isupper():
            return match
    return None


def _word_casing(texts: Iterable[str]) -> dict[str, str]:
    """Most frequent spelling of each word (lower-cased key) in mixed-case running text."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for w in _WORD.findall(text) if not w.isupper() or len(w) == 1)
    best: dict[str, tuple[int, str]] = {}
    for word, n in counts.items():
        key = word.lower()
        if key not in best or n > best[key][0]:
            best[key] = (n, word)
    return {key: word for key, (_, word) in best.items()}


def strip_leading_caps_word(text: str) -> str:
    """Drop a heading word such as "ALEPH." that opens a verse (the acrostic letters of Psalm 119)."""
    word = _WORD.match(text)
    if word is None or len(word.group(0)) < 2 or not word.group(0).isupper():
        return text
    rest = text[word.end() :].lstrip(".").strip()
    return rest or text


# The RV1909 ends each of Paul's letters and Hebrews with the printed editions' note on where it
# was written ("Amén. Fué escrita á los Hebreos desde Italia con Timoteo."), which other
# translations leave out.
_SUBSCRIPTION = re.compile(
    r"^(.*\b(?:Amén|Amen)\.)\s+\S[^.]*\b(?:escrita|enviada|written|sent)\b.*$", re.DOTALL | re.IGNORECASE
)


def strip_subscription(text: str) -> str:
    """Remove a closing note about where a letter was written from a book's last verse."""
    match = _SUBSCRIPTION.match(text)
    return match.group(1) if match else text

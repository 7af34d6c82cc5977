"""What a caller asks of the pipeline: texts, and per text its languages, prefix and constraints; per
request the search, the avoided phrases, confidence and markup handling.

Every surface builds these and nothing else: Translator.translate from its arguments, seq2seq-translate
from its files (a language per line with language_columns), the server from a request's JSON, the corpus
commands from their chunks. seq2seq.inference.pipeline turns a list of requests into Translations,
searching texts of different languages and requests together where their search is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError


@dataclass(frozen=True)
class TextRequest:
    """One text and what is asked of its translation. `src_lang` / `tgt_lang`: a multilingual model's
    language codes for this text (None: the Translator's); `prefix`: the start its translation is made
    to have ("" for none); `constraints`: target phrases it must contain (None: none asked for; () asks
    for none but still reports how many were met)."""

    text: str
    src_lang: str | None = None
    tgt_lang: str | None = None
    prefix: str = ""
    constraints: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TranslationRequest:
    """Texts translated with one search. `options`: None for the Translator's; `avoid`: target phrases
    no translation may contain; `confidence`: each Translation's confidence and token probabilities;
    `markup`: "auto" | "true" | "false" (None: the Translator's)."""

    texts: tuple[TextRequest, ...]
    options: SearchOptions | None = None
    avoid: tuple[str, ...] | None = None
    confidence: bool = False
    markup: str | bool | None = None
    segment: str = "none"  # "sentences": each text split into sentences (seq2seq.inference.sentences)

    @classmethod
    def of(
        cls,
        texts: Sequence[str],
        *,
        src_lang: str | Sequence[str | None] | None = None,
        tgt_lang: str | Sequence[str | None] | None = None,
        prefixes: Sequence[str] | None = None,
        constraints: Sequence[Sequence[str]] | None = None,
        avoid: Sequence[str] | None = None,
        options: SearchOptions | None = None,
        confidence: bool = False,
        markup: str | bool | None = None,
        segment: str = "none",
    ) -> TranslationRequest:
        """A request from lists, as Python callers and files give them: a language code for every text
        or one per text, and a prefix and a list of phrases per text. A list of another length than
        `texts` is a one-line UserError."""
        if isinstance(texts, str):
            raise UserError(f"texts takes a list of strings, not one string ({texts[:40]!r}); wrap it in [ ]")
        count = len(texts)
        sources, targets = per_text(src_lang, count, "src_lang"), per_text(tgt_lang, count, "tgt_lang")
        starts = _checked(
            prefixes, count, "prefixes", f"got {{}} prefixes for {count} texts; pass one per text"
        )
        phrases = _checked(constraints, count, "constraints", f"got {{}} constraint lines for {count} input "
                           "lines; give one line of phrases (or an empty line) per input line")  # fmt: skip
        if isinstance(avoid, str):
            raise UserError(f"avoid takes a list of phrases, not one string ({avoid!r})")
        return cls(
            texts=tuple(
                TextRequest(
                    text,
                    sources[i],
                    targets[i],
                    starts[i] if starts else "",
                    _phrases(phrases[i], i) if phrases is not None else None,
                )
                for i, text in enumerate(texts)
            ),
            options=options,
            avoid=None if avoid is None else tuple(avoid),
            confidence=confidence,
            segment=segment,
            markup=markup,
        )

    @property
    def constrained(self) -> bool:
        """Whether any text asks for constraints (the search then reports how many each met)."""
        return any(text.constraints is not None for text in self.texts)


def per_text(code: str | Sequence[str | None] | None, count: int, setting: str) -> list[str | None]:
    """A language setting as one code per text: one code for all, or a list of one (or None) per text."""
    if code is None or isinstance(code, str):
        return [code] * count
    codes = list(code)
    if len(codes) != count:
        raise UserError(f"{setting} has {len(codes)} codes for {count} texts; give one code, or one per text")
    return codes


def _checked(values: Sequence | None, count: int, setting: str, mismatch: str) -> list | None:
    """`values` as a list of one per text; `mismatch`: the error for another count ({} is the count)."""
    if values is None:
        return None
    if isinstance(values, str):
        raise UserError(f"{setting} takes a list with one entry per text, not one string ({values[:40]!r})")
    if len(values) != count:
        raise UserError(mismatch.format(len(values)))
    return list(values)


def _phrases(phrases: Sequence[str], index: int) -> tuple[str, ...]:
    if isinstance(phrases, str):
        raise UserError(f"constraints line {index + 1}: give a list of phrases, not one string ({phrases!r})")
    return tuple(phrases)


__all__ = ["TextRequest", "TranslationRequest", "per_text"]

"""Which language a text is in, for `src_lang=auto`: Lingua (the `clean` extra's detector, its models
inside the package, nothing downloaded) over every language it knows. A text gets the most likely of
the languages the model reads, unless Lingua is sure it is another one: then it is named as such and
refused, instead of being taken for the nearest language the model reads.

A model's codes are matched to Lingua's languages by ISO 639-1 (`en`, M2M100's codes) or ISO 639-3
(`eng`, the first part of NLLB's `eng_Latn`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seq2seq.errors import UserError

AUTO = "auto"  # the src_lang value that asks for detection
UNSERVED_CONFIDENCE = 0.7  # this sure of a language no model reads, a text is refused rather than guessed


@dataclass(frozen=True)
class Detected:
    """A text's language: the model's code for it (None: a language the model does not read), Lingua's
    name and ISO 639-1 code for it, and its confidence in [0, 1]."""

    code: str | None
    name: str
    iso: str
    confidence: float


def detect(texts: Sequence[str], codes: Sequence[str]) -> list[Detected]:
    """Per text, its language: the most likely of `codes`' languages, unless Lingua is at least
    UNSERVED_CONFIDENCE sure it is another (then `code` is None: no model here reads it)."""
    detector = _detector()
    found = []
    for text in texts:
        values = detector.compute_language_confidence_values(text)
        served = [value for value in values if code_of(value.language, codes) is not None]
        best = values[0]
        if served and (code_of(best.language, codes) is not None or best.value < UNSERVED_CONFIDENCE):
            best = served[0]
        iso = best.language.iso_code_639_1.name.lower()
        found.append(Detected(code_of(best.language, codes), best.language.name.title(), iso, best.value))
    return found


def code_of(language: Any, codes: Sequence[str]) -> str | None:
    """The model's code for a Lingua language (ISO 639-1, or ISO 639-3 before an NLLB script), or None."""
    iso1, iso3 = language.iso_code_639_1.name.lower(), language.iso_code_639_3.name.lower()
    for code in codes:
        if code.lower() == iso1 or code.lower().split("_")[0] == iso3:
            return code
    return None


def language_name(code: str) -> str:
    """A language's English name for a code (ISO 639-1 or 639-3, an NLLB code's first part); the code
    itself when Lingua does not know it."""
    lingua = _lingua()
    base = code.lower().split("_")[0]
    for make in (
        lambda: lingua.Language.from_iso_code_639_1(lingua.IsoCode639_1.from_str(base)),
        lambda: lingua.Language.from_iso_code_639_3(lingua.IsoCode639_3.from_str(base)),
    ):
        try:
            return str(make().name.title())
        except ValueError:
            continue
    return code


@functools.cache
def _detector() -> Any:
    lingua = _lingua()
    return (
        lingua.LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()
    )  # trigrams: 1/4 the memory


def _lingua() -> Any:
    try:
        import lingua
    except ImportError:
        raise UserError("src_lang=auto detects languages with Lingua; pip install 'seq2seq[clean]'") from None
    return lingua


__all__ = ["AUTO", "Detected", "code_of", "detect", "language_name"]

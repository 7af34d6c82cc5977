"""Corpus cleaning transforms: each one a step of `data.transforms`, applied in order when data is prepared.

A transform is a class with explicit keyword arguments (so Hydra can `instantiate` a config entry with a
`_target_`), and this small surface, which `seq2seq.data.cleaning.clean_corpus` relies on:

    name                   short, for the log and summary.json
    settings() -> dict     JSON values: everything that changes the output (part of the cache key)
    reset() -> None        forget what earlier pairs taught it (called before every pass)
    __call__(pairs)        a chunk of (source, target) pairs -> one entry per pair: the pair (kept),
                           a changed pair, or None (removed)

It works on a chunk, not a pair, so that detectors and models can run one batch per chunk. A stateful
transform (Deduplicate) keeps its state across the chunks of one pass; `reset()` starts a new pass.
Optional libraries (sacremoses, lingua) are imported by the transform that needs them: `pip install
'seq2seq[clean]'`. Subclasses of `Transform` get `reset()` and the check that their settings are JSON.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from seq2seq.data.renamed_settings import renamed_keyword
from seq2seq.errors import UserError

Pair = tuple[str, str]
Result = list[Pair | None]
CLEAN_EXTRA = "pip install 'seq2seq[clean]'"


class Transform(ABC):
    """The interface of the transforms here (and of seq2seq.inference.pair_filter's): a subclass must say
    its settings and what it does to a chunk of pairs; it is stateless unless it overrides `reset`."""

    name: str = "Transform"

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """A JSON dict of everything that changes the output (it keys the cleaned corpus's cache)."""

    def reset(self) -> None:  # noqa: B027 - a default, not an abstract method: stateless transforms keep it
        """Stateless transforms have nothing to forget."""

    @abstractmethod
    def __call__(self, pairs: Sequence[Pair]) -> Result:
        """Per pair: None (removed), the pair itself (kept) or a new pair (changed)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({json.dumps(self.settings(), sort_keys=True)})"


def check_transform(obj: object) -> None:
    """Raise a one-line UserError unless `obj` has the transform surface (module docstring), e.g. when a
    `data.transforms` entry's `_target_` names some other class or a function."""
    what = f"{type(obj).__module__}.{type(obj).__qualname__}"
    missing = [attr for attr in ("settings", "reset", "__call__") if not callable(getattr(obj, attr, None))]
    if isinstance(obj, type) or not isinstance(getattr(obj, "name", None), str) or missing:
        raise UserError(
            f"data.transforms entry {what} is not a transform (it needs name, settings(), reset() and "
            "__call__(pairs)); use a class of seq2seq.data.transforms or seq2seq.inference.pair_filter"
        )
    try:
        json.dumps(obj.settings(), sort_keys=True)  # type: ignore[attr-defined]
    except TypeError as error:
        raise UserError(
            f"data.transforms entry {what}: settings() is not JSON ({error}); fix the class"
        ) from None


def library_version(package: str) -> str:
    """The installed version of `package` (part of a transform's settings: a new release may change its
    output); a missing package is a UserError naming the extra to install."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise UserError(f"{package} is not installed; {CLEAN_EXTRA}") from None


def squeeze(text: str) -> str:
    """Single spaces, none at the ends: what corpus readers give, kept after a transform changes text."""
    return " ".join(text.split())


def _changed(pair: Pair, source: str, target: str) -> Pair:
    """The original tuple when nothing changed, so identity tells kept from changed cheaply."""
    return pair if (source, target) == pair else (source, target)


class MosesPunctuation(Transform):
    """Moses' punctuation normalisation (sacremoses), each side with its own language's rules: unifies
    quotes, dashes, spaces around punctuation, so one symbol is not learnt under several spellings."""

    name = "MosesPunctuation"

    def __init__(self, *, src_lang: str, tgt_lang: str, pre_replace_unicode_punct: bool = False) -> None:
        """`pre_replace_unicode_punct`: also map CJK and full-width punctuation to ASCII first."""
        try:
            from sacremoses import MosesPunctNormalizer
        except ImportError:
            raise UserError(f"MosesPunctuation needs sacremoses; {CLEAN_EXTRA}") from None
        self.src_lang, self.tgt_lang, self.pre_replace = src_lang, tgt_lang, pre_replace_unicode_punct
        self._normalizers = [
            MosesPunctNormalizer(lang=lang, pre_replace_unicode_punct=pre_replace_unicode_punct)
            for lang in (src_lang, tgt_lang)
        ]

    def settings(self) -> dict[str, Any]:
        return {
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "pre_replace_unicode_punct": self.pre_replace,
            "sacremoses": library_version("sacremoses"),
        }

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        src, tgt = self._normalizers
        return [_changed(p, squeeze(src.normalize(p[0])), squeeze(tgt.normalize(p[1]))) for p in pairs]


class UnicodeNormalize(Transform):
    """Unicode normal form of both sides. NFKC folds compatibility characters (full-width letters,
    ligatures, superscripts) into their plain forms; the corpus readers already apply NFC."""

    name = "UnicodeNormalize"
    FORMS = ("NFC", "NFKC")  # decomposed forms would be recomposed by the readers of the cleaned files

    def __init__(self, *, form: str = "NFKC") -> None:
        if form not in self.FORMS:
            raise UserError(
                f"UnicodeNormalize form={form!r} is not supported; use one of {', '.join(self.FORMS)}"
            )
        self.form = form

    def settings(self) -> dict[str, Any]:
        return {"form": self.form, "unicode": unicodedata.unidata_version}

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        form = self.form
        return [_changed(p, *(squeeze(unicodedata.normalize(form, side)) for side in p)) for p in pairs]  # type: ignore[misc]


def _letters(text: str) -> str:
    """Casefolded letters and digits only: what is left of a sentence without spacing and punctuation."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


class DropIdentical(Transform):
    """Remove pairs whose target is their source (copied untranslated), compared casefolded and without
    whitespace or punctuation, so "Amen." / "amen" counts; pairs of two empty or punctuation-only
    sides go too."""

    name = "DropIdentical"

    def __init__(self) -> None:
        pass

    def settings(self) -> dict[str, Any]:
        return {}

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        return [None if _letters(p[0]) == _letters(p[1]) else p for p in pairs]


class DropRepeats(Transform):
    """Remove pairs where either side has a run of one character longer than `max_char_run`, or one word
    (casefolded, punctuation between allowed) `max_word_run` times in a row: scraping and generation
    debris ("!!!!!!!!!!", "the the the the") a model would learn to repeat."""

    name = "DropRepeats"

    def __init__(self, *, max_char_run: int = 8, max_word_run: int = 4) -> None:
        if max_char_run < 1 or max_word_run < 2:
            raise UserError("DropRepeats needs max_char_run >= 1 and max_word_run >= 2; raise the setting")
        self.max_char_run, self.max_word_run = max_char_run, max_word_run
        self._chars = re.compile(rf"(.)\1{{{max_char_run},}}")  # a character, then max_char_run more
        self._words = re.compile(rf"\b(\w+)\b(?:\W+\1\b){{{max_word_run - 1}}}")

    def settings(self) -> dict[str, Any]:
        return {"max_char_run": self.max_char_run, "max_word_run": self.max_word_run}

    def _repetitive(self, text: str) -> bool:
        return bool(self._chars.search(text) or self._words.search(text.casefold()))

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        return [None if self._repetitive(p[0]) or self._repetitive(p[1]) else p for p in pairs]


class DropLengthRatio(Transform):
    """Remove pairs whose sides differ in length, counted in characters, by more than `max_char_ratio`:
    often one side is a fragment or holds extra sentences. Short pairs ("Amen." / "Así sea.") vary a lot
    in ratio, so the ratio is only judged once the longer side has `min_chars`; an empty side then always
    fails. (`max_ratio` is the old name of `max_char_ratio`, accepted for one release.)"""

    name = "DropLengthRatio"

    def __init__(
        self, *, max_char_ratio: float = 2.5, min_chars: int = 20, max_ratio: float | None = None
    ) -> None:
        max_char_ratio = renamed_keyword(
            "DropLengthRatio", old="max_ratio", old_value=max_ratio, new="max_char_ratio",
            new_value=max_char_ratio, default=2.5,
        )  # fmt: skip
        if max_char_ratio < 1:
            raise UserError(
                f"DropLengthRatio max_char_ratio={max_char_ratio} is below 1; every pair would go: use >= 1"
            )
        self.max_char_ratio, self.min_chars = float(max_char_ratio), min_chars

    def settings(self) -> dict[str, Any]:
        return {"max_char_ratio": self.max_char_ratio, "min_chars": self.min_chars}

    def _unbalanced(self, source: str, target: str) -> bool:
        shorter, longer = sorted((len(source), len(target)))
        return longer >= self.min_chars and longer > self.max_char_ratio * shorter

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        return [None if self._unbalanced(*p) else p for p in pairs]


class Deduplicate(Transform):
    """Keep the first occurrence of each pair (or of each source or target, `on`), exactly compared.

    Memory is 8 bytes per distinct key, not a Python object: a 64-bit blake2b hash of each key, kept in
    one sorted uint64 array that each chunk's new hashes are merged into (a copy of the array per chunk).
    Two different keys share a hash with probability about n^2 / 2^65 (n distinct keys): negligible.
    """

    name = "Deduplicate"
    KEYS = ("pair", "source", "target")

    def __init__(self, *, on: str = "pair") -> None:
        if on not in self.KEYS:
            raise UserError(f"Deduplicate on={on!r} is not supported; use one of {', '.join(self.KEYS)}")
        self.on = on
        self.seen = np.empty(0, dtype=np.uint64)

    def settings(self) -> dict[str, Any]:
        return {"on": self.on}

    def reset(self) -> None:
        self.seen = np.empty(0, dtype=np.uint64)

    def _key(self, pair: Pair) -> bytes:
        if self.on == "pair":
            source = pair[0].encode()
            return len(source).to_bytes(8, "little") + source + pair[1].encode()
        return pair[0 if self.on == "source" else 1].encode()

    def hashes(self, pairs: Sequence[Pair]) -> np.ndarray:
        digests = b"".join(hashlib.blake2b(self._key(p), digest_size=8).digest() for p in pairs)
        return np.frombuffer(digests, dtype=np.uint64)

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        hashes = self.hashes(pairs)
        unique, first = np.unique(hashes, return_index=True)  # sorted; first occurrence in the chunk
        where = np.searchsorted(self.seen, unique)  # where each would go in the sorted array
        known = self.seen[np.minimum(where, len(self.seen) - 1)] == unique if len(self.seen) else where < 0
        self.seen = np.insert(self.seen, where[~known], unique[~known])  # stays sorted
        keep = np.zeros(len(pairs), dtype=bool)
        keep[first[~known]] = True
        return [p if k else None for p, k in zip(pairs, keep.tolist())]


# Languages a detector tells apart by default: widely written ones, near neighbours of the usual corpus
# languages included, but not the many that Bible-style name lists are mistaken for (docs/data-cleaning.md).
COMMON_LANGUAGES = (
    "ar ca cs da de el en es fi fr hi hu id it ja ko la nb nl pl pt ro ru sv tr uk vi zh".split()
)


def _lingua() -> Any:
    try:
        import lingua
    except ImportError:
        raise UserError(f"LanguageFilter needs lingua-language-detector; {CLEAN_EXTRA}") from None
    return lingua


class LanguageFilter(Transform):
    """Remove pairs where a side is confidently in another language than its own (a web page's English
    boilerplate in the Spanish column, sides swapped): lingua's detector, run on a chunk's sides at once.

    A side is judged wrong when the detector's best language among `languages` (ISO 639-1 codes; the
    pair's own two are always added) is another one with a relative confidence of at least
    `min_confidence`, and its expected language gets less than `max_expected`. Sides shorter than
    `min_chars` characters are not judged: a few words or a list of names fit many languages.
    The detector is built on first use, once per object.
    """

    name = "LanguageFilter"

    def __init__(
        self, *, src_lang: str, tgt_lang: str, languages: Sequence[str] | None = None,
        min_confidence: float = 0.5, max_expected: float = 0.05, min_chars: int = 20,
        low_accuracy: bool = False,
    ) -> None:  # fmt: skip
        """`low_accuracy`: lingua's faster mode on trigrams alone, markedly less accurate on sentences."""
        self.codes = sorted({*(languages if languages is not None else COMMON_LANGUAGES), src_lang, tgt_lang})
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self.min_chars, self.low_accuracy = min_chars, low_accuracy
        self.min_confidence, self.max_expected = float(min_confidence), float(max_expected)
        self._languages = {code: self._language(code) for code in self.codes}
        self._detector: Any = None

    @staticmethod
    def _language(code: str) -> Any:
        lingua = _lingua()
        try:
            return lingua.Language.from_iso_code_639_1(lingua.IsoCode639_1.from_str(str(code).lower()))
        except ValueError:
            known = sorted(language.iso_code_639_1.name.lower() for language in lingua.Language.all())
            raise UserError(f"LanguageFilter: {code!r} is no language lingua knows; use ISO 639-1 codes "
                            f"among {' '.join(known)}") from None  # fmt: skip

    def settings(self) -> dict[str, Any]:
        return {"src_lang": self.src_lang, "tgt_lang": self.tgt_lang, "languages": self.codes,
                "min_confidence": self.min_confidence, "max_expected": self.max_expected,
                "min_chars": self.min_chars, "low_accuracy": self.low_accuracy,
                "lingua": library_version("lingua-language-detector")}  # fmt: skip

    def detector(self) -> Any:
        if self._detector is None:
            builder = _lingua().LanguageDetectorBuilder.from_languages(*self._languages.values())
            if self.low_accuracy:
                builder = builder.with_low_accuracy_mode()
            self._detector = builder.with_preloaded_language_models().build()
        return self._detector

    def wrong_language(self, texts: Sequence[str], expected: Sequence[str]) -> list[bool]:
        """Per text, whether it is confidently not in its expected language (code); short ones are not."""
        judged = [i for i, text in enumerate(texts) if len(text) >= self.min_chars]
        wrong = [False] * len(texts)
        if not judged:
            return wrong
        rows = self.detector().compute_language_confidence_values_in_parallel([texts[i] for i in judged])
        for i, row in zip(judged, rows):  # each row: every candidate language, most likely first
            own = self._languages[expected[i]]
            best = row[0]
            expected_value = next(value.value for value in row if value.language == own)
            wrong[i] = (
                best.language != own
                and best.value >= self.min_confidence
                and expected_value < self.max_expected
            )
        return wrong

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        texts = [p[0] for p in pairs] + [p[1] for p in pairs]
        wrong = self.wrong_language(texts, [self.src_lang] * len(pairs) + [self.tgt_lang] * len(pairs))
        n = len(pairs)
        return [None if wrong[i] or wrong[n + i] else p for i, p in enumerate(pairs)]

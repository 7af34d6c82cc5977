"""The languages of a multilingual model imported from Hugging Face: which ones a Translator reads and
writes, and the tokens that say so.

Such a model's tokenizers have language codes (MappedTokenizer.languages: code -> token id), and the
code of a chosen language is what the tokenizer's encode() puts first (its `prefix`):
- M2M100 and NLLB: the source starts with the source language's code, and the model must emit the
  target language's code as its first output token, right after its decoder start token (what Hugging
  Face calls forced_bos_token_id). Every search forces the target tokenizer's prefix
  (Translator.search), ahead of a user's own prefix.
- OPUS-MT (Marian) with several target languages: the source starts with the target language's
  token (">>spa<<"); nothing is forced on the output.
`src_lang=` and `tgt_lang=` choose the languages (`choose_languages`); left out, a Translator uses the
ones recorded when the model was imported, and an M2M100/NLLB model that recorded none asks for them
(`check_languages`; an OPUS-MT text may also start with its ">>xx<<" token itself, as with Hugging
Face). A model without language codes (our own, a one-target OPUS-MT model) refuses them.

The forced code is part of each hypothesis (its tokens start with it, and with our engine its score
counts the code's log-probability, as for any forced token), never of a translation's text (decoding
skips it), nor of a Translation's `tokens` and `token_probs` (its confidence): they describe the
translation's own pieces, and the code's probability says which language the model expected, not how
well it translated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from seq2seq.data.mapped_tokenizer import MappedTokenizer
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError

SHOWN_CODES = 20  # an error lists this many of a model's codes, then their count
MARIAN = "marian"  # the MappedTokenizer kind whose target language is named on the source (OPUS-MT)


def languages_of(tokenizer: TextTokenizer) -> Mapping[str, int]:
    """A tokenizer's language codes (code -> token id); {} for one without (our own Tokenizer)."""
    return tokenizer.languages


def prefix_of(tokenizer: TextTokenizer) -> tuple[int, ...]:
    """The ids a tokenizer's encode() puts first (a language code); () for one without."""
    return tuple(tokenizer.prefix)


def names_target_on_source(tokenizer: Any) -> bool:
    """Whether the model reads its target language's code at the start of the source (OPUS-MT)."""
    return isinstance(tokenizer, MappedTokenizer) and tokenizer.kind == MARIAN and bool(tokenizer.languages)


def codes_listed(languages: Mapping[str, int]) -> str:
    """The codes, alphabetically: all of them, or the first SHOWN_CODES and how many there are."""
    codes = sorted(languages)
    shown = ", ".join(codes[:SHOWN_CODES])
    return shown if len(codes) <= SHOWN_CODES else f"{shown}, ... ({len(codes)} codes)"


def choose_languages(src: Any, tgt: Any, *, src_lang: str | None, tgt_lang: str | None) -> tuple[Any, Any]:
    """The (source, target) tokenizers for the languages chosen (None: as they are); a one-line
    UserError for a code the model does not have, or for a model without language codes."""
    if names_target_on_source(src):
        if src_lang is not None:
            raise UserError(f"src_lang={src_lang!r}: this OPUS-MT model is told only the language to "
                            "translate into; leave src_lang out and pass tgt_lang")  # fmt: skip
        return with_language(src, tgt_lang, setting="tgt_lang"), tgt
    return with_language(src, src_lang, setting="src_lang"), with_language(tgt, tgt_lang, setting="tgt_lang")


def with_language(tokenizer: Any, code: str | None, *, setting: str) -> Any:
    """The tokenizer whose prefix is language `code`'s token (None: `tokenizer` as it is). `setting`:
    the name the code was given under ("src_lang", "tgt_lang"), for the errors."""
    if code is None:
        return tokenizer
    languages = languages_of(tokenizer)
    if not languages:
        raise UserError(f"{setting}={code!r}: this model has no language codes; leave {setting} out")
    if not isinstance(code, str) or code not in languages:
        raise UserError(
            f"{setting}={code!r} is not a language of this model; choose one of {codes_listed(languages)}"
        )
    return tokenizer.for_language(code)


def check_languages(src: Any, tgt: Any, *, source: bool = True) -> None:
    """A one-line UserError when an M2M100/NLLB model has no language chosen on a side: it could not
    tell which language it reads (src_lang) or should write (tgt_lang). `source`: check that side too."""
    if names_target_on_source(src):
        return  # OPUS-MT: tgt_lang, or the text's own ">>xx<<" token
    sides = ((src, "src_lang", "reads"),) if source else ()
    for tokenizer, setting, does in (*sides, (tgt, "tgt_lang", "translates into")):
        languages = languages_of(tokenizer)
        if languages and tokenizer.language is None:
            raise UserError(f"this model {does} {len(languages)} languages and none was chosen; pass "
                            f"{setting}= one of {codes_listed(languages)}")  # fmt: skip


def any_languages(src: Any, tgt: Any) -> tuple[str | None, str | None]:
    """(src_lang, tgt_lang) to pass when any will do (a warm-up search): for a side without a language
    chosen that needs one, its first code alphabetically; else None."""
    if names_target_on_source(src):
        return None, None
    return tuple(  # type: ignore[return-value]
        min(languages_of(t)) if languages_of(t) and t.language is None else None for t in (src, tgt)
    )


def forced_codes(src: Any, tgt: Any) -> frozenset[int]:
    """The token ids a search may force first: the target language codes of an M2M100/NLLB model (none
    for OPUS-MT, which names the target language on the source, nor for a model without codes)."""
    return frozenset() if names_target_on_source(src) else frozenset(languages_of(tgt).values())


def without_language_code(hypothesis: Hypothesis, codes: frozenset[int]) -> Hypothesis:
    """The hypothesis without the language code it starts with (the forced one) and its log-probability:
    the translation's own tokens, as a Translation's tokens and confidence describe them. Its score stays
    the search's. A code the model writes later is its own output and stays."""
    if not hypothesis.tokens or hypothesis.tokens[0] not in codes:
        return hypothesis
    scores = hypothesis.positional_scores
    return dataclasses.replace(
        hypothesis, tokens=hypothesis.tokens[1:], positional_scores=None if scores is None else scores[1:]
    )


@dataclasses.dataclass(frozen=True)
class ModelLanguages:
    """What one model translates: the languages it reads and writes, and whether it is told them (a
    multilingual model's codes; a one-pair model reads and writes the pair its training recorded, with
    no codes). A server routes requests by it, and lists it in GET /languages."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    source_codes: bool  # the model takes src_lang (M2M100, NLLB)
    target_codes: bool  # the model takes tgt_lang (M2M100, NLLB, OPUS-MT's >>xx<< tokens)

    @classmethod
    def of(cls, src: Any, tgt: Any, recorded: tuple[str, str] | None) -> ModelLanguages:
        """From a model's tokenizers and the (source, target) its training config recorded, if any."""
        names_target = names_target_on_source(src)
        source_codes, target_codes = bool(languages_of(src)) and not names_target, bool(languages_of(tgt))
        mine = recorded or (None, None)
        sources = sorted(languages_of(src)) if source_codes else [mine[0]] if mine[0] else []
        written = languages_of(src) if names_target else languages_of(tgt)
        targets = sorted(written) if written else [mine[1]] if mine[1] else []
        return cls(tuple(sources), tuple(targets), source_codes, target_codes or names_target)

    def serves(self, src: str | None, tgt: str | None) -> bool:
        """Whether the model translates src -> tgt (None: any language on that side); a multilingual
        model does not translate a language into itself."""
        if (src is not None and src not in self.sources) or (tgt is not None and tgt not in self.targets):
            return False
        return src is None or tgt is None or src != tgt or not (self.source_codes or self.target_codes)

    def pairs(self) -> list[tuple[str, str]]:
        return [(s, t) for s in self.sources for t in self.targets if self.serves(s, t)]


__all__ = [
    "MARIAN",
    "SHOWN_CODES",
    "ModelLanguages",
    "any_languages",
    "check_languages",
    "choose_languages",
    "codes_listed",
    "forced_codes",
    "languages_of",
    "names_target_on_source",
    "prefix_of",
    "with_language",
    "without_language_code",
]

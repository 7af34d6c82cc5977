"""A request as the search takes it: each text cleaned, its markup taken out, encoded by its own
languages' tokenizer and split into pieces of at most max_input_tokens; per piece, the target tokens
forced first and the phrases it must contain; the avoided phrases.

Input policy: an empty or whitespace-only text gives one empty piece (translated as ""); control
characters are removed and spaces squeezed (`clean_line`); a text longer than `max_input_tokens` is
truncated (the count is logged), split into pieces translated separately and joined
(`long_lines="split"`), or refused (`long_lines="error"`, `TooLong`). A multilingual model's source
language code starts every piece and counts in its tokens; its target language code is forced first on
every piece, then a text's prefix on its first piece. A text's phrases (its own, then the glossary's
terms found in it) go on its first piece.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.constraint_input import encode_avoid, encode_constraints, on_pieces
from seq2seq.inference.language_detection import AUTO, detect
from seq2seq.inference.languages import languages_of, prefix_of
from seq2seq.inference.markup import Marked
from seq2seq.inference.markup_text import markup_setting, take_out
from seq2seq.inference.request import TextRequest, TranslationRequest
from seq2seq.inference.sentences import segment_setting, sentences
from seq2seq.inference.text_input import clean_line
from seq2seq.inference.translation_setup import TranslationSetup

log = logging.getLogger(__name__)
Label = Callable[[int], str]  # names the text of an index (from 0) in errors


class TooLong(UserError):
    """A text over max_input_tokens under long_lines=error; `index`: the text, `tokens`: its length."""

    def __init__(self, message: str, *, index: int, tokens: int) -> None:
        super().__init__(message)
        self.index, self.tokens = index, tokens


@dataclass(frozen=True)
class Prepared:
    """Texts as the model reads them: one or more pieces per text (more with long_lines="split")."""

    sources: list[list[int]]  # token ids ending in eos per piece; [] for an empty text
    owners: list[int]  # the index of the text each piece belongs to
    n_texts: int
    options: SearchOptions
    prefixes: list[list[int]]  # per piece, the target tokens its search forces first ([]: none)
    constraints: list[list[list[int]]] | None = None  # per piece, target phrases (None: unconstrained)
    avoid: tuple[tuple[int, ...], ...] = ()  # target phrases no translation may contain
    marked: list[Marked | None] | None = None  # per text, its markup (None: plain); None: no text has any
    confidence: bool = False  # the search gives per-token log-probabilities; Translations their confidence
    separators: list[list[str]] | None = None  # per text, what joins its pieces' translations (None: spaces)
    # per text, the whitespace before and after it, put back around its translation (segment=sentences on
    # a text without markup; None: none)
    edges: list[tuple[str, str]] | None = None

    def plain(self, texts: Sequence[str]) -> list[str]:
        """`texts` as the model read them: a text with markup as its plain text."""
        if self.marked is None:
            return list(texts)
        return [text if found is None else found.plain for text, found in zip(texts, self.marked)]

    @property
    def tokens(self) -> int:
        return sum(len(source) for source in self.sources)

    def given(self) -> list[bool]:
        """Per text, whether it had anything to translate (an empty or blank one has no tokens)."""
        found = [False] * self.n_texts
        for owner, source in zip(self.owners, self.sources):
            found[owner] = found[owner] or bool(source)
        return found


def prepare(
    translator: TranslationSetup,
    request: TranslationRequest,
    *,
    label: Label = lambda index: f"input line {index + 1}",
    constraint_label: Label = lambda index: f"constraints line {index + 1}",
) -> Prepared:
    """The request's texts as the search takes them (module docstring). Texts are grouped by their
    languages, each group encoded by its languages' Translator (Translator.for_languages); a language
    the model lacks, or a long text under long_lines=error, is a one-line UserError naming the text
    (`label`; a constraint's: `constraint_label`)."""
    options = request.options or translator.options
    mode = translator.markup if request.markup is None else markup_setting(request.markup)
    texts = [text.text for text in request.texts]
    marked = take_out(texts, mode, translator.markup_pattern)
    plain = [text if found is None else found.plain for text, found in zip(texts, marked)]
    groups = _language_groups(translator, with_detected_languages(translator, request.texts, label), label)
    pieces, forced, separators, truncated = _encoded(groups, request, plain, label)
    if truncated:
        log.warning("%d line(s) longer than %d tokens were truncated (long_lines=truncate)", truncated,
                    translator.max_input_tokens)  # fmt: skip
    banned = encode_avoid(request.avoid, translator.tgt_tokenizer)
    owners = [index for index, found in enumerate(pieces) for _ in found]
    phrases = None
    if request.constrained or translator.glossary is not None:
        per_text = _text_phrases(groups, request, plain, options, banned, constraint_label)
        phrases = on_pieces(per_text, owners)
    return Prepared(
        sources=[piece for found in pieces for piece in found], owners=owners, n_texts=len(texts),
        options=options, prefixes=[prefix for found in forced for prefix in found], constraints=phrases,
        avoid=tuple(tuple(tokens) for tokens in banned),
        marked=marked if any(found is not None for found in marked) else None, confidence=request.confidence,
        separators=separators if segment_setting(request.segment) == "sentences" else None,
        edges=[_edges(text, bare) for text, bare in zip(texts, plain)] if request.segment == "sentences"
        else None,
    )  # fmt: skip


def _edges(text: str, plain: str) -> tuple[str, str]:
    """The whitespace a text starts and ends with (before its first tag and after its last, with markup;
    `plain`: the text without markup)."""
    if not plain.strip():
        return "", ""  # nothing is translated: the text comes back as its markup puts it back
    return text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]


def _encoded(
    groups: list[tuple[list[int], TranslationSetup]], request: TranslationRequest, plain: Sequence[str],
    label: Label,
) -> tuple[list[list[list[int]]], list[list[list[int]]], list[list[str]], int]:  # fmt: skip
    """Per text its pieces, their forced prefixes and the strings that join their translations (the
    whitespace between sentences with segment=sentences, else spaces); how many texts were truncated."""
    count = len(plain)
    pieces: list[list[list[int]]] = [[] for _ in range(count)]
    forced: list[list[list[int]]] = [[] for _ in range(count)]
    separators: list[list[str]] = [[] for _ in range(count)]
    truncated = 0
    by_sentence = segment_setting(request.segment) == "sentences"
    for members, chosen in groups:
        for index in members:
            text = request.texts[index]
            parts, gaps = [plain[index]], []
            if by_sentence and plain[index].strip():
                language = text.src_lang or chosen.src_tokenizer.language or (chosen.languages or (None,))[0]
                parts, gaps = sentences(plain[index], language)
            for number, part in enumerate(parts):
                found, cut = encode_text(chosen, part, index, label)
                if found == [[]] and len(parts) > 1:
                    continue  # a sentence with nothing to translate: its gap goes with the next one
                if pieces[index]:
                    separators[index].append(gaps[number - 1] if number else " ")
                separators[index].extend(" " for _ in found[1:])
                pieces[index] += found
                truncated += cut
            pieces[index] = pieces[index] or [[]]
            forced[index] = _forced(chosen.tgt_tokenizer, text, len(pieces[index]))
    return pieces, forced, separators, truncated


def _language_groups(
    translator: TranslationSetup, texts: Sequence[TextRequest], label: Label
) -> list[tuple[list[int], TranslationSetup]]:
    """The texts grouped by their languages, each group with its languages' Translator, checked (a
    multilingual model needs both languages chosen); the blank texts, which are not searched, in a
    group of their own with `translator`. An error names the group's first text when the texts have
    several languages."""
    groups: dict[tuple[str | None, str | None], list[int]] = {}
    blank = []
    for index, text in enumerate(texts):
        if text.text.strip():
            groups.setdefault((text.src_lang, text.tgt_lang), []).append(index)
        else:
            blank.append(index)
    chosen = [(blank, translator)] if blank else []
    for (src_lang, tgt_lang), members in groups.items():
        try:
            languages = translator.for_languages(src_lang=src_lang, tgt_lang=tgt_lang)
            languages.check_languages()
        except UserError as error:
            if len(groups) == 1:
                raise
            raise UserError(f"{label(members[0])} ({src_lang or 'default'} -> {tgt_lang or 'default'}): "
                            f"{error}") from None  # fmt: skip
        chosen.append((members, languages))
    return chosen


def with_detected_languages(
    translator: TranslationSetup, texts: Sequence[TextRequest], label: Label
) -> Sequence[TextRequest]:
    """`texts` with each src_lang=auto replaced by the language detected in the text, among those the
    model reads (seq2seq.inference.language_detection); a text in a language it does not read is a
    one-line UserError naming the text. A one-pair model's own language becomes None (its default)."""
    asked = [index for index, text in enumerate(texts) if text.src_lang == AUTO and text.text.strip()]
    if not asked:
        return [text if text.src_lang != AUTO else dataclasses.replace(text, src_lang=None) for text in texts]
    codes = list(languages_of(translator.src_tokenizer)) or (
        [translator.languages[0]] if translator.languages else []
    )
    if not codes:
        raise UserError("src_lang=auto needs a model that knows the languages it reads; this one records "
                        "none: name src_lang, or leave it out")  # fmt: skip
    found = dict(zip(asked, detect([texts[i].text for i in asked], codes)))
    resolved = []
    for index, text in enumerate(texts):
        if text.src_lang != AUTO:
            resolved.append(text)
            continue
        detected = found.get(index)
        if detected is not None and detected.code is None:
            served = ", ".join(sorted(codes))
            reads = f"{detected.name} ({detected.iso})"
            raise UserError(f"{label(index)} reads as {reads}; this model translates from {served} only")
        code = None if detected is None or not languages_of(translator.src_tokenizer) else detected.code
        resolved.append(dataclasses.replace(text, src_lang=code))
    return resolved


def _text_phrases(
    groups: list[tuple[list[int], TranslationSetup]], request: TranslationRequest, plain: Sequence[str],
    options: SearchOptions, banned: list[list[int]], label: Label,
) -> list[list[list[int]]]:  # fmt: skip
    """Per text, its phrases as target tokens: its own, then the glossary's terms found in its plain
    text (seq2seq.inference.constraint_input checks them; errors name the text by `label`)."""
    beams = options.beam_size if options.searches_beams else 1
    phrases: list[list[list[int]]] = [[] for _ in plain]
    for members, chosen in groups:
        found = _phrases(chosen, [request.texts[i] for i in members], [plain[i] for i in members])
        named = _numbered(label, members)
        encoded = encode_constraints(
            found, chosen.tgt_tokenizer, beam_size=beams, avoided=banned, label=named
        )
        for index, tokens in zip(members, encoded):
            phrases[index] = tokens
    return phrases


def encode_text(
    translator: TranslationSetup, text: str, index: int, label: Label
) -> tuple[list[list[int]], bool]:
    """One text's pieces (its source language code, up to max_input_tokens - len(code) of its tokens,
    eos; [[]] for a text with nothing to translate), and whether it was truncated."""
    limit, tokenizer = translator.max_input_tokens, translator.src_tokenizer
    head = list(prefix_of(tokenizer))  # what encode() puts first: on every piece of a split text
    room = max(limit - len(head), 1)
    line = clean_line(text)
    body = tokenizer.encode(line)[len(head) :] if line else []
    if len(head) + len(body) > limit and translator.long_lines == "error":
        raise TooLong(
            f"{label(index)} has {len(head) + len(body)} tokens, more than the limit of {limit}; "
            "pass long_lines=truncate or long_lines=split",
            index=index,
            tokens=len(head) + len(body),
        )
    truncated = len(head) + len(body) > limit and translator.long_lines == "truncate"
    if truncated:
        body = body[:room]
    chunks = [body[start : start + room] for start in range(0, max(len(body), 1), room)]
    return [head + chunk + [tokenizer.eos_id] if chunk else [] for chunk in chunks], truncated


def _numbered(label: Label, members: Sequence[int]) -> Callable[[int], str]:
    """`label` for the n-th (from 1) of `members`, as encode_constraints numbers its texts."""
    return lambda number: label(members[number - 1])


def _forced(tokenizer: TextTokenizer, text: TextRequest, count: int) -> list[list[int]]:
    """Per piece of a text, the target tokens forced first: the target language code on every piece,
    then the text's prefix on its first."""
    head = list(prefix_of(tokenizer))
    start = clean_line(text.prefix)
    ids = tokenizer.encode(start) if start else []
    first = ids if head and ids[: len(head)] == head else head + ids  # the language code once
    return [first] + [list(head) for _ in range(count - 1)]


def _phrases(
    translator: TranslationSetup, texts: Sequence[TextRequest], plain: Sequence[str]
) -> list[list[str]]:
    """Per text, its own phrases then the glossary's terms found in its plain text, without repeats."""
    glossary = translator.glossary
    found = []
    for text, words in zip(texts, plain):
        glossed = glossary.constraints(clean_line(words)) if glossary is not None else []
        found.append(list(dict.fromkeys([*(text.constraints or ()), *glossed])))
    return found


def merge(parts: Sequence[Prepared]) -> Prepared:
    """Several prepared requests (with the same search and avoided phrases) as one, their texts numbered
    one after another; confidence when any asks for it, constraints when any has them."""
    offset, owners, marked = 0, [], []
    for part in parts:
        owners.extend(offset + owner for owner in part.owners)
        marked.extend(part.marked if part.marked is not None else [None] * part.n_texts)
        offset += part.n_texts
    constrained = any(part.constraints is not None for part in parts)
    return Prepared(
        sources=[source for part in parts for source in part.sources],
        owners=owners,
        n_texts=offset,
        options=parts[0].options,
        prefixes=[prefix for part in parts for prefix in part.prefixes],
        constraints=[
            phrases for part in parts for phrases in (part.constraints or [[] for _ in part.sources])
        ]
        if constrained
        else None,
        avoid=parts[0].avoid,
        marked=marked if any(found is not None for found in marked) else None,
        confidence=any(part.confidence for part in parts),
        separators=_merged_separators(parts),
        edges=None
        if all(part.edges is None for part in parts)
        else [edge for part in parts for edge in (part.edges or [("", "")] * part.n_texts)],
    )


def _merged_separators(parts: Sequence[Prepared]) -> list[list[str]] | None:
    """The parts' separators, text after text (spaces for a part without); None when no part has any."""
    if all(part.separators is None for part in parts):
        return None
    return [
        joints
        for part in parts
        for joints in (part.separators or [[" "] * (part.owners.count(i) - 1) for i in range(part.n_texts)])
    ]


def text_of(prepared: Prepared, index: int) -> Prepared:
    """Text `index` of `prepared` alone (a server finds the text a failing batch failed on)."""
    pieces = [piece for piece, owner in enumerate(prepared.owners) if owner == index]
    constraints = prepared.constraints
    return Prepared(
        sources=[prepared.sources[p] for p in pieces],
        owners=[0] * len(pieces),
        n_texts=1,
        options=prepared.options,
        prefixes=[prepared.prefixes[p] for p in pieces],
        constraints=None if constraints is None else [constraints[p] for p in pieces],
        avoid=prepared.avoid,
        marked=None
        if prepared.marked is None or prepared.marked[index] is None
        else [prepared.marked[index]],
        confidence=prepared.confidence,
        separators=None if prepared.separators is None else [prepared.separators[index]],
        edges=None if prepared.edges is None else [prepared.edges[index]],
    )


__all__ = ["Label", "Prepared", "TooLong", "encode_text", "merge", "prepare", "text_of"]

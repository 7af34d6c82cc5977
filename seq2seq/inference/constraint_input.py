"""Constraints as users give them (phrases of text) turned into target tokens, checked line by line.

Each input line (text) may carry target phrases its translation must contain: given explicitly
(`Translator.translate(..., constraints=)`, `seq2seq-translate constraints=FILE`, the server's
"constraints") and/or found by a glossary in its source (seq2seq.inference.glossary). Phrases are cleaned
like input text and split into target pieces; a phrase given twice counts once. `avoid` phrases must
appear in no translation. Every problem is a one-line error naming the line:
  * a line count that differs from the input's;
  * an empty phrase, one that the tokenizer turns into no pieces, or one with characters the target
    vocabulary lacks (an unknown piece would be written instead);
  * more phrases than the beam can hold (at most beam_size per line; greedy search has one beam);
  * a required phrase that is avoided, or that contains an avoided phrase (it could never be written).
A phrase that starts with a letter of a script written without spaces (Chinese, Japanese, Thai, ...:
seq2seq.decode.spaceless) is split as the tokenizer splits it inside a
sentence, without the word-start mark it puts in front of a text; an avoided one is banned both ways.
A text split into pieces (long_lines=split) gets its phrases on its first piece.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.decode.spaceless import written_without_spaces
from seq2seq.errors import UserError
from seq2seq.inference.text_input import clean_line

log = logging.getLogger(__name__)


def phrase_tokens(phrase: str, tokenizer: TextTokenizer, *, where: str) -> list[int]:
    """The target pieces of one phrase, as the tokenizer writes it inside a sentence (module docstring)."""
    return phrase_forms(phrase, tokenizer, where=where)[0]


def phrase_forms(phrase: str, tokenizer: TextTokenizer, *, where: str) -> list[list[int]]:
    """The ways a phrase can be written: as inside a sentence, then, for a phrase in a script written
    without spaces, with the word-start mark (as at the start of a text), when that differs."""
    text = clean_line(phrase)
    if not text:
        raise UserError(f"{where}: a phrase is empty; separate phrases with one tab and leave none empty")
    forms = [tokenizer.encode(text)[len(tokenizer.prefix) :]]  # inside a sentence: no language code
    if written_without_spaces(text[0]):
        forms.insert(0, tokenizer.encode_unmarked(text))
    if not forms[0]:
        raise UserError(f"{where}: the phrase {phrase!r} becomes no target pieces; drop it or reword it")
    if any(tokenizer.unk_id in tokens for tokens in forms):
        raise UserError(
            f"{where}: the phrase {phrase!r} has characters the target vocabulary lacks (they would be "
            "written as <unk>); drop them or the phrase"
        )
    return [tokens for n, tokens in enumerate(forms) if tokens not in forms[:n]]


def text_constraints(
    constraints: Sequence[Sequence[str]] | None,
    glossary_phrases: Sequence[Sequence[str]] | None,
    *,
    n_texts: int,
) -> list[list[str]] | None:
    """Per text, its explicit phrases then its glossary's, in order and without repeats (None: none)."""
    if constraints is not None and len(constraints) != n_texts:
        raise UserError(
            f"got {len(constraints)} constraint lines for {n_texts} input lines; give one line of phrases "
            "(or an empty line) per input line"
        )
    if constraints is None and glossary_phrases is None:
        return None
    explicit = constraints if constraints is not None else [[] for _ in range(n_texts)]
    found = glossary_phrases if glossary_phrases is not None else [[] for _ in range(n_texts)]
    for number, phrases in enumerate(explicit, start=1):
        if isinstance(phrases, str):
            raise UserError(
                f"constraints line {number}: give a list of phrases, not one string ({phrases!r})"
            )
    return [list(dict.fromkeys([*mine, *glossed])) for mine, glossed in zip(explicit, found)]


def encode_constraints(
    phrases: Sequence[Sequence[str]],
    tokenizer: TextTokenizer,
    *,
    beam_size: int,
    avoided: Sequence[Sequence[int]],
    label: Callable[[int], str] = lambda number: f"constraints line {number}",
) -> list[list[list[int]]]:
    """Per text, its phrases as target tokens, checked (module docstring); errors name a text by
    `label(its number from 1)`."""
    banned = list(dict.fromkeys(tuple(tokens) for tokens in avoided))
    encoded = []
    for number, line in enumerate(phrases, start=1):
        where = label(number)
        given = [(phrase, tuple(phrase_tokens(phrase, tokenizer, where=where))) for phrase in line]
        for phrase, pieces in given:
            check_not_avoided(phrase, pieces, banned, tokenizer, where=where)
        tokens = list(dict.fromkeys(pieces for _, pieces in given))
        if len(tokens) > beam_size:
            raise UserError(
                f"{where}: {len(tokens)} phrases, more than the beam of {beam_size} can hold; raise "
                "decode.beam_size (greedy search has one beam) or give fewer phrases"
            )
        encoded.append([list(pieces) for pieces in tokens])
    return encoded


def check_not_avoided(
    phrase: str,
    pieces: tuple[int, ...],
    banned: Sequence[tuple[int, ...]],
    tokenizer: TextTokenizer,
    *,
    where: str,
) -> None:
    """Refuse a required phrase whose pieces hold an avoided phrase's as a run: the search could never
    write it. (An avoided phrase across the edge of a required one is fine: other text can go there.)"""
    for avoided in banned:
        if pieces == avoided:
            raise UserError(f"{where}: {phrase!r} is both required and avoided; drop it from one of them")
        if any(pieces[i : i + len(avoided)] == avoided for i in range(len(pieces) - len(avoided) + 1)):
            raise UserError(
                f"{where}: the phrase {phrase!r} contains the avoided phrase {tokenizer.decode(avoided)!r}, "
                "so it can never be written; drop one of the two"
            )


def encode_avoid(phrases: Sequence[str] | None, tokenizer: TextTokenizer) -> list[list[int]]:
    """The avoided phrases as target tokens, every way each can be written (`phrase_forms`; [] for none)."""
    if phrases is None:
        return []
    if isinstance(phrases, str):
        raise UserError(f"avoid takes a list of phrases, not one string ({phrases!r})")
    return [
        tokens
        for n, phrase in enumerate(phrases, 1)
        for tokens in phrase_forms(phrase, tokenizer, where=f"avoid phrase {n}")
    ]


def on_pieces(per_text: list[list[list[int]]], owners: Sequence[int]) -> list[list[list[int]]]:
    """Per piece, its text's phrases on the text's first piece and none on the others."""
    seen: set[int] = set()
    per_piece = []
    for owner in owners:
        per_piece.append(per_text[owner] if owner not in seen else [])
        seen.add(owner)
    split = {owner for owner, count in Counter(owners).items() if count > 1}
    if any(per_text[owner] for owner in split):
        log.warning("a line split into pieces (long_lines=split) carries its constraints on its first piece")
    return per_piece


def log_unmet(results: Sequence[Sequence[Hypothesis]], *, no_repeat_ngram_size: int = 0) -> int:
    """Log how many translations missed some of their phrases; returns it. eos waits for every phrase, so
    such a translation met the length limit first: the limit was too short for them, or
    `no_repeat_ngram_size` forbade writing one (a phrase whose n-gram the output already holds)."""
    unmet = [
        nbest[0]
        for nbest in results
        if nbest and nbest[0].constraints_total and nbest[0].constraints_met < nbest[0].constraints_total
    ]
    if unmet:
        blocking = (
            f", or lower decode.no_repeat_ngram_size={no_repeat_ngram_size}: it forbids writing any "
            f"{no_repeat_ngram_size} pieces twice, so a phrase can be blocked by the output or another phrase"
            if no_repeat_ngram_size > 0
            else ""
        )
        log.warning(
            "%d translation(s) reached the length limit before meeting all their constraints (the "
            "hypothesis meeting the most was kept); raise decode.max_len_a / max_len_b%s",
            len(unmet),
            blocking,
        )
    return len(unmet)


__all__ = [
    "check_not_avoided",
    "encode_avoid",
    "encode_constraints",
    "log_unmet",
    "on_pieces",
    "phrase_forms",
    "phrase_tokens",
    "text_constraints",
]

"""Where each piece of a tokenized text stands in the text: the character spans tag projection needs
(seq2seq.inference.tag_projection) to link the model's pieces to the text's words and markup.

It works from the pieces' strings (`id_to_piece`, the TextTokenizer surface both tokenizer kinds have),
walking the text left to right: a piece's surface is its string without the word-start mark (▁). A piece
whose surface is not where the walk stands is looked for a little further on (sentencepiece's
normalisation may have changed a character); a piece found nowhere (an unknown-character piece, a byte
piece) gets an empty span where the walk stands. Spans are non-decreasing, never overlap, and cover
every character the pieces spell out. `word_of_pieces` maps each piece to the word it falls in (the
word alignments of guided-alignment training and of the alignment studies count words).
"""

from __future__ import annotations

from collections.abc import Sequence

from seq2seq.data.word_alignment import word_spans

WORD_START = "\u2581"  # ▁
LOOKAHEAD = 8  # characters a piece may be found past where the walk stands


def word_of_pieces(text: str, pieces: Sequence[str]) -> list[int | None]:
    """Which word (seq2seq.data.word_alignment.word_spans) each piece's characters fall in; None for a
    piece of no word."""
    words = word_spans(text)
    owners: list[int | None] = []
    for start, end in piece_spans(text, pieces):
        inside = [w for w, (first, last) in enumerate(words) if first < end and start < last]
        owners.append(inside[0] if inside else None)
    return owners


def piece_spans(text: str, pieces: Sequence[str]) -> list[tuple[int, int]]:
    """Per piece, its [start, end) characters in `text` (see the module's docstring)."""
    spans: list[tuple[int, int]] = []
    position = 0
    for piece in pieces:
        surface = piece.replace(WORD_START, " ").strip()
        start = _skip_space(text, position)
        if not surface or _is_byte_or_special(piece):
            spans.append((start, start))
            position = start
            continue
        found = text.find(surface, start, start + LOOKAHEAD + len(surface))
        if found < 0:
            spans.append((start, start))
            position = start
            continue
        spans.append((found, found + len(surface)))
        position = found + len(surface)
    return spans


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _is_byte_or_special(piece: str) -> bool:
    """<0xE9>-style byte pieces and <unk>, <s>, </s>, <pad>: no surface of their own in the text."""
    return piece.startswith("<") and piece.endswith(">") and len(piece) > 2

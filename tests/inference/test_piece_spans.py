"""piece_spans finds each piece where sentencepiece itself says it stands (its own character offsets,
without the space a word-initial piece carries), for the source text and for a decoded translation."""

from __future__ import annotations

import itertools

import pytest
from tiny_models import sentences, tiny_tokenizer

from seq2seq.inference.piece_spans import piece_spans

TEXTS = [*sentences(50, seed=9), "Él dijo: “Ven, mañana” a Jerusalén.", "  spaced   out  ", "x", ""]


def sentencepiece_spans(processor, text: str, proto) -> list[tuple[int, int]]:
    starts = [0]
    for character in text:
        starts.append(starts[-1] + len(character.encode("utf-8")))
    char_at = {byte: index for index, byte in enumerate(starts)}
    spans = []
    for piece in proto.pieces:
        start, end = char_at[piece.begin], char_at[piece.end]
        while start < end and text[start].isspace():
            start += 1
        spans.append((start, end))
    return spans


@pytest.mark.parametrize("text", TEXTS)
def test_source_spans_are_sentencepieces_own(text):
    tokenizer = tiny_tokenizer()
    processor = tokenizer._sp
    proto = processor.encode(text, return_type="proto")
    got = piece_spans(text, [tokenizer.id_to_piece(p.id) for p in proto.pieces])
    expected = sentencepiece_spans(processor, text, proto)
    # an unknown character's piece (<unk>) spells nothing: empty where the walk stands; the pieces that
    # spell some of the text stand where sentencepiece says
    known = [
        i for i, p in enumerate(proto.pieces) if p.id != tokenizer.unk_id and expected[i][0] < expected[i][1]
    ]
    assert [got[i] for i in known] == [expected[i] for i in known]
    assert all(start == end for i, (start, end) in enumerate(got) if proto.pieces[i].id == tokenizer.unk_id)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(got))


@pytest.mark.parametrize("text", TEXTS[:20])
def test_decoded_spans_are_sentencepieces_own(text):
    tokenizer = tiny_tokenizer()
    ids = tokenizer.encode(text)
    proto = tokenizer._sp.decode(ids, return_type="proto")
    decoded = proto.text
    expected = sentencepiece_spans(tokenizer._sp, decoded, proto)
    assert piece_spans(decoded, [tokenizer.id_to_piece(i) for i in ids]) == expected

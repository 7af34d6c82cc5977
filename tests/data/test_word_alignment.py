"""Symmetrizing two directions of word alignment (grow-diag-final-and), on hand-made links; and word
splitting. eflomal itself is exercised by benchmarks/markup.py, which builds its reference with it."""

from __future__ import annotations

import pytest

from seq2seq.data.word_alignment import parse_links, symmetrized, word_spans, words


@pytest.mark.parametrize(
    ("forward", "reverse", "expected"),
    [
        # the intersection grows into a neighbouring union link that covers an unaligned word, twice
        ([(0, 0), (1, 1), (2, 1)], [(0, 0), (1, 1), (2, 2)], [(0, 0), (1, 1), (2, 1), (2, 2)]),
        # final-and: a distant union link joins when both of its words are still unaligned ...
        ([(0, 0), (3, 3)], [(0, 0)], [(0, 0), (3, 3)]),
        # ... and not when one of them already has a link
        ([(0, 0), (0, 2)], [(0, 0)], [(0, 0)]),
        # no agreement at all: final-and keeps what covers free words, forward direction first
        ([(0, 1)], [(0, 0)], [(0, 1)]),
        ([], [], []),
    ],
)
def test_grow_diag_final_and(forward, reverse, expected):
    assert symmetrized(forward, reverse) == expected


def test_words_split_punctuation_and_keep_their_places():
    line = "And God said, “Let there be light.”"
    assert words(line) == ["And", "God", "said", ",", "“", "Let", "there", "be", "light", ".", "”"]
    assert [line[a:b] for a, b in word_spans(line)] == words(line)
    assert parse_links("0-0 2-1 10-3") == [(0, 0), (2, 1), (10, 3)]

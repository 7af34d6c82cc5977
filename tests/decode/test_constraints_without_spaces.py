"""Terminology in a language written without spaces (Chinese, on a sentencepiece model trained here): a
phrase is split as it is inside a sentence, without the word-start mark, is met where the model writes
it, and no piece of such a script counts as gluing onto a phrase."""

from __future__ import annotations

import pytest
import torch
from decode_helpers import IDS, sources
from scripted_model import Scripted

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.constrained import constrained_beam_search
from seq2seq.decode.constraints import continuing_pieces
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.constraint_input import encode_avoid, encode_constraints

GENESIS = [
    "起初，神创造天地。",
    "地是空虚混沌，渊面黑暗；神的灵运行在水面上。",
    "神说：要有光，就有了光。",
    "神看光是好的，就把光暗分开了。",
    "神称光为昼，称暗为夜。有晚上，有早晨，这是头一日。",
    "神说：诸水之间要有空气，将水分为上下。",
    "神就造出空气，将空气以下的水、空气以上的水分开了。事就这样成了。",
    "神称空气为天。有晚上，有早晨，是第二日。",
]
SENTENCE = "神说：诸水之间要有空气，将水分为上下。"


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(GENESIS * 20, vocab_size=100, model_type="bpe")


def pieces(tokenizer: Tokenizer, tokens: list[int]) -> list[str]:
    return [tokenizer.id_to_piece(token) for token in tokens]


def test_a_phrase_is_split_as_inside_a_sentence(tokenizer):
    inside = tokenizer.pieces(SENTENCE)
    assert inside[0] == "\u2581神说" and {"水", "空气"} <= set(inside)  # only the first piece has a mark
    assert tokenizer.pieces("空气") == ["\u2581", "空气"] and tokenizer.pieces("神") == ["\u2581神"]
    (encoded,) = encode_constraints([["空气", "神", "上下"]], tokenizer, beam_size=4, avoided=[])
    assert [pieces(tokenizer, phrase) for phrase in encoded] == [["空气"], ["神"], ["上下"]]
    assert [pieces(tokenizer, phrase) for phrase in encode_avoid(["神"], tokenizer)] == [["神"], ["\u2581神"]]
    with pytest.raises(UserError, match="'神说' contains the avoided phrase '神'"):
        encode_constraints([["神说"]], tokenizer, beam_size=4, avoided=encode_avoid(["神"], tokenizer))


def test_no_piece_of_a_script_without_spaces_continues_a_word():
    samples = ["说", "空气", "カ", "ー", "ひ", "ก", "s", "é", "9", "한", "\u2581s"]  # Korean has spaces
    assert continuing_pieces(samples).tolist() == [False] * 6 + [True] * 4 + [False]


def test_phrases_are_met_where_the_model_writes_them(tokenizer):
    script = tokenizer.encode(SENTENCE)
    model = Scripted(script, tokenizer.vocab_size)
    (phrases,) = encode_constraints([["水", "空气"]], tokenizer, beam_size=4, avoided=[])
    continuing = continuing_pieces(tokenizer.pieces_of_vocabulary())
    src = sources([5], vocab=tokenizer.vocab_size)
    options = SearchOptions(beam_size=4, max_len_a=0.0, max_len_b=24)  # room for every bank
    (best, *_), *_ = constrained_beam_search(model, src, options, [phrases], continuing=continuing, **IDS)
    assert best.tokens == script and tokenizer.decode(best.tokens) == SENTENCE  # no space, nothing moved
    assert best.constraints_met == best.constraints_total == 2
    assert torch.equal(continuing, continuing_pieces(tokenizer.pieces_of_vocabulary()))  # left as it was

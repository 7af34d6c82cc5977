"""The sentencepiece wrapper: fixed special ids, exact round trips, serialisation, tiny corpora."""

import logging

import pytest

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import UserError

TEXTS = [
    "In the beginning, God created the heavens and the earth.",
    "En el principio crió Dios los cielos y la tierra.",
    "The earth was formless and empty.",
    "Y la tierra estaba desordenada y vacía.",
    "God said, “Let there be light,” and there was light.",
    "Y dijo Dios: Sea la luz: y fué la luz.",
] * 20


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.train(TEXTS, vocab_size=120, model_type="bpe")


def test_special_ids_are_fixed(tokenizer):
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2, 3)
    assert (Tokenizer.PAD_ID, Tokenizer.UNK_ID, Tokenizer.BOS_ID, Tokenizer.EOS_ID) == (0, 1, 2, 3)
    assert [tokenizer.id_to_piece(i) for i in range(4)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tokenizer.vocab_size == 120


def test_encode_decode_round_trip_and_specials_are_ignored(tokenizer):
    for text in set(TEXTS):
        ids = tokenizer.encode(text)
        assert min(ids) > 3  # no specials added by encode
        assert tokenizer.decode(ids) == text
        assert tokenizer.decode([2, *ids, 3, 0, 0]) == text
    assert tokenizer.encode_batch(TEXTS[:2]) == [tokenizer.encode(TEXTS[0]), tokenizer.encode(TEXTS[1])]
    assert "".join(tokenizer.pieces(TEXTS[0])).replace("▁", " ").strip() == TEXTS[0]


def test_a_lone_word_start_piece_at_either_end_leaves_no_space(tokenizer):
    """A model may end (or start) its output with a lone "▁": the text is stripped, as encode() never
    keeps such a space and as MarianTokenizer, an exported model's tokenizer, strips it."""
    space = tokenizer.piece_to_id("▁")
    assert tokenizer.id_to_piece(space) == "▁"
    ids = tokenizer.encode(TEXTS[2])
    assert tokenizer.decode([*ids, space, 3]) == tokenizer.decode([space, space, *ids, space]) == TEXTS[2]
    assert tokenizer.decode([space]) == ""


def test_bytes_and_file_round_trips(tokenizer, tmp_path):
    again = Tokenizer.from_bytes(tokenizer.to_bytes())
    assert again == tokenizer and again.encode(TEXTS[1]) == tokenizer.encode(TEXTS[1])
    tokenizer.save(tmp_path / "m" / "spm.model")
    assert Tokenizer.from_file(tmp_path / "m" / "spm.model") == tokenizer
    with pytest.raises(UserError, match="not a valid sentencepiece model"):
        Tokenizer.from_bytes(b"not a model")
    with pytest.raises(UserError, match="no such sentencepiece model file"):
        Tokenizer.from_file(tmp_path / "absent.model")


def test_training_is_deterministic():
    first = Tokenizer.train(TEXTS, vocab_size=100, model_type="unigram")
    second = Tokenizer.train(TEXTS, vocab_size=100, model_type="unigram")
    assert first.to_bytes() == second.to_bytes()


def test_tiny_corpus_gets_a_smaller_vocabulary_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        tokenizer = Tokenizer.train(["a b c", "hello there"], vocab_size=8000, model_type="unigram")
    assert 4 < tokenizer.vocab_size < 8000
    assert f"supports only {tokenizer.vocab_size} of the 8000 requested pieces" in caplog.text
    assert tokenizer.decode(tokenizer.encode("hello there")) == "hello there"


def test_bad_settings_are_user_errors():
    with pytest.raises(UserError, match="model_type='wordpiece' is not supported"):
        Tokenizer.train(TEXTS, vocab_size=100, model_type="wordpiece")
    with pytest.raises(UserError, match="the training corpus is empty"):
        Tokenizer.train(["", ""], vocab_size=100)
    with pytest.raises(UserError, match="vocab_size=4 is too small"):
        Tokenizer.train(TEXTS, vocab_size=4)

"""tokenizer_from_bytes / tokenizer_from_file: our sentencepiece Tokenizer and a MappedTokenizer each come
back as what was saved, and anything else is today's one-line error."""

import pytest

from seq2seq.data.mapped_tokenizer import MAGIC, MappedTokenizer, piece_names
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes, tokenizer_from_file
from seq2seq.errors import UserError

TEXTS = ["the man sees the dog.", "el hombre ve el perro.", "a woman loves the house."] * 30


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(TEXTS, vocab_size=60)


def test_our_tokenizer_comes_back_from_its_bytes_and_file(tokenizer, tmp_path):
    again = tokenizer_from_bytes(tokenizer.to_bytes())
    assert type(again) is Tokenizer and again == tokenizer
    tokenizer.save(tmp_path / "spm.model")
    assert tokenizer_from_file(tmp_path / "spm.model") == tokenizer
    assert isinstance(tokenizer, TextTokenizer)


def test_a_mapped_tokenizer_comes_back_from_its_bytes_and_file(tokenizer, tmp_path):
    model = tokenizer.to_bytes()
    mapped = MappedTokenizer(
        kind="marian", model=model, vocabulary=piece_names(model), pad_id=0, eos_id=3, unk_id=1, bos_id=0,
        specials=[0, 1, 3],
    )  # fmt: skip
    data = mapped.to_bytes()
    assert data.startswith(MAGIC) and type(tokenizer_from_bytes(data)) is MappedTokenizer
    assert tokenizer_from_bytes(data) == mapped
    mapped.save(tmp_path / "mapped.bin")
    assert tokenizer_from_file(tmp_path / "mapped.bin") == mapped
    assert mapped.encode(TEXTS[0]) == tokenizer.encode(TEXTS[0])  # the table is sentencepiece's ids here


def test_anything_else_is_todays_error(tmp_path):
    with pytest.raises(UserError, match="not a valid sentencepiece model"):
        tokenizer_from_bytes(b"not a model")
    with pytest.raises(UserError, match="no such sentencepiece model file"):
        tokenizer_from_file(tmp_path / "absent.model")
    (tmp_path / "garbage").write_bytes(MAGIC + b"{")
    with pytest.raises(UserError, match="not a valid seq2seq mapped tokenizer"):
        tokenizer_from_file(tmp_path / "garbage")

"""MappedTokenizer's rules on tiny sentencepiece models trained here: ids through the table, the special
tokens, language prefixes, each family's spacing rules, and its bytes. Equality with transformers'
tokenizers themselves: tests/interop/test_huggingface_tokenizers.py."""

import io
import random

import pytest
import sentencepiece as spm

from seq2seq.data.mapped_tokenizer import MAGIC, MappedTokenizer, piece_names
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes, tokenizer_from_file
from seq2seq.errors import UserError

WORDS = "the a man woman dog sees loves house water light día niño café".split()


def _sentences(count: int = 300) -> list[str]:
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))) + "." for _ in range(count)]


def _model(model_type: str, unk: int, bos: int, eos: int) -> bytes:
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_sentences()), model_writer=writer, vocab_size=60, model_type=model_type,
        character_coverage=1.0, unk_id=unk, bos_id=bos, eos_id=eos, pad_id=-1, hard_vocab_limit=False,
        minloglevel=2, num_threads=1,
    )  # fmt: skip
    return writer.getvalue()


@pytest.fixture(scope="module")
def marian() -> MappedTokenizer:
    """Marian's layout: </s>=0 <unk>=1, the pieces in another order than sentencepiece's, codes, <pad>."""
    model = _model("unigram", unk=1, bos=-1, eos=0)
    pieces = [p for p in piece_names(model) if p not in ("</s>", "<unk>")]
    random.Random(3).shuffle(pieces)
    table = ["</s>", "<unk>", *pieces, ">>es<<", ">>fr<<", "<pad>"]
    return MappedTokenizer(
        kind="marian", model=model, vocabulary=table, pad_id=len(table) - 1, eos_id=0, unk_id=1,
        bos_id=len(table) - 1, specials=[0, 1, len(table) - 1],
        languages={"es": len(table) - 3, "fr": len(table) - 2},
    )  # fmt: skip


@pytest.fixture(scope="module")
def nllb() -> MappedTokenizer:
    """NLLB's layout: <s> <pad> </s> <unk>, the pieces shifted by one, language codes, <mask>."""
    model = _model("bpe", unk=0, bos=1, eos=2)
    table = ["<s>", "<pad>", "</s>", "<unk>", *piece_names(model)[3:], "eng_Latn", "spa_Latn", "<mask>"]
    n = len(table)
    return MappedTokenizer(
        kind="nllb", model=model, vocabulary=[*table, "madeupword0000"], pad_id=1, eos_id=2, unk_id=3,
        bos_id=2, specials=[0, 1, 2, 3, n - 3, n - 2, n - 1], hf_size=n,
        languages={"eng_Latn": n - 3, "spa_Latn": n - 2}, language="eng_Latn",
    )  # fmt: skip


@pytest.fixture(scope="module")
def m2m100() -> MappedTokenizer:
    model = _model("bpe", unk=0, bos=1, eos=2)
    table = ["<s>", "<pad>", "</s>", "<unk>", *piece_names(model)[3:], "__en__", "__es__"]
    n = len(table)
    return MappedTokenizer(
        kind="m2m100", model=model, vocabulary=[*table, "madeupword0000"], pad_id=1, eos_id=2, unk_id=3,
        bos_id=2, specials=[0, 1, 2, 3, n - 2, n - 1], languages={"en": n - 2, "es": n - 1}, language="es",
        hf_size=n, clean_up_spaces=True,
    )  # fmt: skip


def test_pieces_map_to_ids_through_the_table(marian):
    processor = spm.SentencePieceProcessor()
    processor.LoadFromSerializedProto(marian.model_bytes)
    text = "the man sees a dog."
    pieces = processor.encode(text, out_type=str)
    assert marian.encode(text) == [marian.piece_to_id(p) for p in pieces]
    assert marian.encode(text) != processor.encode(text)  # another numbering than sentencepiece's
    assert marian.pieces(text) == pieces and marian.decode(marian.encode(text)) == text
    unknown = [marian.piece_to_id("▁"), marian.unk_id]  # "ΩΩ": one unknown piece after a word start
    assert marian.encode("the ΩΩ man") == [*marian.encode("the"), *unknown, *marian.encode("man")]
    assert isinstance(marian, TextTokenizer) and marian.prefix == ()
    assert marian.vocab_size == len(marian.pieces_of_vocabulary())
    assert (marian.pad_id, marian.bos_id, marian.eos_id, marian.unk_id) == (marian.vocab_size - 1,) * 2 + (
        0,
        1,
    )


def test_marian_language_code_and_special_strings(marian):
    es = marian.piece_to_id(">>es<<")
    assert marian.encode(">>es<< the man") == [es, *marian.encode("the man")]
    assert marian.encode(">>xx<< the")[0] == marian.unk_id  # an unknown code is one unknown token
    assert marian.encode("the >>es<<")[-1] != es  # only a leading code counts
    assert marian.encode("the</s>man") == [*marian.encode("the"), marian.eos_id, *marian.encode("man")]
    assert marian.for_language("es").encode("the") == [es, *marian.encode("the")]
    assert marian.for_language(">>fr<<").prefix == (marian.piece_to_id(">>fr<<"),)
    with pytest.raises(UserError, match="'de' is not one of this marian tokenizer's languages: es, fr"):
        marian.for_language("de")


def test_decode_drops_every_special_id(marian, m2m100):
    ids = marian.encode("the dog")
    assert marian.decode([marian.pad_id, *ids, marian.unk_id, marian.eos_id, marian.pad_id]) == "the dog"
    es = m2m100.languages["es"]
    assert m2m100.encode("the dog")[0] == es and m2m100.prefix == (es,)
    assert m2m100.decode([m2m100.bos_id, *m2m100.encode("the dog"), m2m100.eos_id]) == "the dog"
    assert m2m100.decode(m2m100.encode("the dog .")) == "the dog."  # clean_up_tokenization_spaces
    madeup = m2m100.vocab_size - 1  # past the HF tokenizer: M2M100Tokenizer writes its unk token
    assert m2m100.decode([*m2m100.encode("the"), madeup, *m2m100.encode("dog")]) == "the<unk>dog"


def test_nllb_spacing_rules(nllb):
    words = nllb.encode("the man")
    space = nllb.piece_to_id("▁")
    assert words[0] == nllb.languages["eng_Latn"] and nllb.bos_id == nllb.eos_id
    assert nllb.encode("the   man") == words and nllb.encode("  the man") == words  # runs of spaces: one
    assert nllb.encode("the man ") == [*words, space]  # a space at the end is a token
    assert nllb.encode("the\tman") == words  # the charsmap makes a tab a space
    assert nllb.encode("") == list(nllb.prefix)
    assert nllb.encode("the</s>man") == [*nllb.encode("the"), nllb.eos_id, *nllb.encode("man")[1:]]
    mask = nllb.piece_to_id("<mask>")  # matched after normalisation, taking the spaces before it
    assert nllb.encode("the  <mask>man") == [*nllb.encode("the"), mask, *nllb.encode("man")[1:]]
    assert nllb.decode(words) == "the man" and nllb.decode([nllb.vocab_size - 1, *words]) == "the man"
    assert nllb.decode([space, *words[1:]]) == " the man"  # only the first token loses its "▁"
    assert "".join(nllb.id_to_piece(i) for i in nllb.encode_unmarked("man")) == "man"


def test_for_language_and_unknown_codes(nllb):
    spanish = nllb.for_language("spa_Latn")
    assert spanish.prefix == (nllb.languages["spa_Latn"],) and spanish.language == "spa_Latn"
    assert spanish.encode("the")[1:] == nllb.encode("the")[1:] and nllb.language == "eng_Latn"
    with pytest.raises(UserError, match="eng_Latn, spa_Latn"):
        nllb.for_language("xyz_Latn")


@pytest.mark.parametrize("name", ["marian", "nllb", "m2m100"])
def test_bytes_round_trip(name, request, tmp_path):
    tokenizer = request.getfixturevalue(name)
    data = tokenizer.to_bytes()
    assert data.startswith(MAGIC)
    again = MappedTokenizer.from_bytes(data)
    assert again == tokenizer and hash(again) == hash(tokenizer) and again.to_bytes() == data
    assert tokenizer_from_bytes(data) == tokenizer
    text = "the niño sees  café ."
    assert again.encode(text) == tokenizer.encode(text) and again.decode(
        again.encode(text)
    ) == tokenizer.decode(tokenizer.encode(text))
    tokenizer.save(tmp_path / "tokenizer.bin")
    assert tokenizer_from_file(tmp_path / "tokenizer.bin") == tokenizer
    other = next(code for code in tokenizer.languages if code != tokenizer.language)
    assert tokenizer.for_language(other) != tokenizer


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"seq2seq-mapped-tokenizer 2\n{}", "its first line is not the format's header"),
        (MAGIC + b"{not json", "not a valid seq2seq mapped tokenizer"),
        (MAGIC + b"[]", "not a valid seq2seq mapped tokenizer"),
        (MAGIC + b'{"kind": "marian"}', "not a valid seq2seq mapped tokenizer"),
    ],
)
def test_garbage_bytes_are_one_line_errors(data, message):
    with pytest.raises(UserError, match=message) as caught:
        MappedTokenizer.from_bytes(data)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pad_id": 10_000}, "outside the vocabulary"),
        ({"kind": "bart"}, "kind 'bart'"),
        ({"model": "AAAA"}, "not a valid sentencepiece model"),
        ({"model": "not base64!"}, "not a valid seq2seq mapped tokenizer"),
        ({"language": "de"}, "language 'de' has no token"),
    ],
)
def test_inconsistent_fields_are_refused(marian, change, message):
    import json

    fields = json.loads(marian.to_bytes()[len(MAGIC) :])
    fields.update(change)
    with pytest.raises(UserError, match=message):
        MappedTokenizer.from_bytes(MAGIC + json.dumps(fields).encode())

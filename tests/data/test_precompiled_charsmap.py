"""A sentencepiece charsmap applied as the `tokenizers` library applies it (NLLB's normaliser): equal to
tokenizers' own Precompiled normaliser on random text, quirks included."""

import io
import random

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from seq2seq.data.precompiled_charsmap import PrecompiledCharsmap, grapheme_clusters

normalizers = pytest.importorskip("tokenizers.normalizers")

ALPHABET = [*"ae \t\n\r\x00\x01\u00a0\u3000ﬁﬀ①½Ω日本ж가ｱﾞ", "e\u0301", "\u0301", "\u0308", "\u200d", "\u200b",
            "\u00ad", "\ufe0f", "🙂", "👍🏽", "\u1100", "\u1161", "\u11a8", "\u0600", "\u0915\u094d\u0937",
            "\r\n", "Å", "\u212b"]  # fmt: skip


@pytest.fixture(scope="module")
def charsmap() -> bytes:
    """The nmt_nfkc charsmap sentencepiece puts in a model by default (as in NLLB's)."""
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["the man sees the dog"] * 50), model_writer=writer, vocab_size=20,
        model_type="bpe", hard_vocab_limit=False, minloglevel=2, num_threads=1,
    )  # fmt: skip
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(writer.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


def test_equal_to_tokenizers_on_random_text(charsmap):
    ours, theirs = PrecompiledCharsmap(charsmap), normalizers.Precompiled(charsmap)
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8)))
        assert ours.normalize(text) == theirs.normalize_str(text), repr(text)


def test_the_quirks(charsmap):
    ours = PrecompiledCharsmap(charsmap)
    assert ours.normalize("ﬁ\u0301") == "fi"  # a short cluster becomes its shortest prefix's rewrite
    assert ours.normalize("e\u0301 x\ty\u3000½") == "é x y 1⁄2"
    assert grapheme_clusters("ae\u0301\r\n\u1100\u1161!") == ["a", "e\u0301", "\r\n", "\u1100\u1161", "!"]
    with pytest.raises(ValueError, match="does not fit"):
        PrecompiledCharsmap(b"\xff\xff\x00\x00")

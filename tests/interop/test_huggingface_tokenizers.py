"""Our tokenizers of Hugging Face model directories give transformers' own ids and text: MarianTokenizer,
M2M100Tokenizer and NllbTokenizer over tiny sentencepiece models (huggingface_fixtures.py), on hostile
text; the files we write load back in transformers with the same ids; broken directories are one-line
errors."""

import json
import random
import shutil
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from huggingface_fixtures import EN, ES, config_entries, m2m100_language_id, sentences, tokenizer_dir  # noqa: E402

from seq2seq.data.mapped_tokenizer import MappedTokenizer  # noqa: E402
from seq2seq.data.tokenizer import Tokenizer  # noqa: E402
from seq2seq.data.tokenizer_formats import tokenizer_from_bytes  # noqa: E402
from seq2seq.errors import UserError  # noqa: E402
from seq2seq.interop.huggingface_tokenizers import (  # noqa: E402
    TOKENIZER_CONFIG,
    read_tokenizers,
    write_tokenizer_files,
)

HOSTILE = [
    "", "the man sees the dog.", " ".join(["the", "dog", "café"] * 667), "🙂 the 👍🏽 dog 🇪🇸",
    "cafe\u0301 e\u0301 niño", "Ω日本 жизнь", "  the   man  ", "\tthe\tdog\t", " the", "the ", "a  b",
    ">>es<< the man", ">>es<<", ">>xx<<the", " >>es<< the", "the </s> man<pad>", "<unk> <s> __en__ __es__",
    "eng_Latn the <mask> dog", "ﬁ ① ½ \u00a0x\u3000y ﬁ\u0301", "\x00\x01 the\x7f", "ｱﾞ ｶﾞ", "the\n\ndog\r\n",
    "don't it's 3.5 2024 ¿qué? ¡sí!", "ÀÉÎ Tom . , ! ?", "مرحبا שלום नमस्ते the", "\u200d\u200b\u00ad",
]  # fmt: skip
KINDS = {  # kind -> (config.json's model_type, transformers' tokenizer class)
    "marian": ("marian", "MarianTokenizer"),
    "m2m100": ("m2m_100", "M2M100Tokenizer"),
    "nllb": ("m2m_100", "NllbTokenizer"),
}


def _config(kind: str, directory: Path) -> dict:
    return {"model_type": KINDS[kind][0], **config_entries(kind, directory)}


@pytest.fixture(scope="module")
def directories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-tokenizers")
    made = {}
    for kind in KINDS:
        made[kind] = tokenizer_dir(kind, root)
        (made[kind] / "config.json").write_text(json.dumps(_config(kind, made[kind])), encoding="utf-8")
    return made


@pytest.fixture(scope="module")
def loaded(directories) -> dict[str, tuple]:
    """kind -> (our source, our target, transformers' AutoTokenizer)."""
    out = {}
    for kind, directory in directories.items():
        src, tgt = read_tokenizers(directory, _config(kind, directory))
        out[kind] = (src, tgt, transformers.AutoTokenizer.from_pretrained(directory))
    return out


def _assert_same(src, tgt, hf, texts) -> None:
    for text in texts:
        source, target = hf(text).input_ids, hf(text_target=text).input_ids
        assert src.encode(text) + [src.eos_id] == source, f"source ids of {text[:60]!r}"
        assert tgt.encode(text) + [tgt.eos_id] == target, f"target ids of {text[:60]!r}"
        assert tgt.decode(target) == hf.decode(target, skip_special_tokens=True), f"text of {text[:60]!r}"
        assert src.decode(source) == hf.decode(source, skip_special_tokens=True), f"text of {text[:60]!r}"


@pytest.mark.parametrize("kind", list(KINDS))
def test_ids_and_text_equal_transformers_on_hostile_text(kind, loaded):
    src, tgt, hf = loaded[kind]
    assert type(hf).__name__ == KINDS[kind][1]
    _assert_same(src, tgt, hf, HOSTILE)


@pytest.mark.parametrize("kind", list(KINDS))
def test_random_text_and_random_ids_equal_transformers(kind, loaded):
    src, tgt, hf = loaded[kind]
    rng = random.Random(1)
    parts = [*EN, *ES, " ", "  ", "\t", "e\u0301", "🙂", "Ω", "ﬁ", "</s>", "<unk>", "<pad>", "<s>", "__es__",
             "spa_Latn", "<mask>", ">>es<<", "<<", ".", "\u3000", "\x00"]  # fmt: skip
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(0, 10))) for _ in range(300)]
    _assert_same(src, tgt, hf, texts)
    for _ in range(300):  # what a random model may generate, specials and fairseq's made-up words included
        ids = [rng.randrange(tgt.vocab_size) for _ in range(rng.randint(0, 12))]
        assert tgt.decode(ids) == hf.decode(ids, skip_special_tokens=True), ids


def test_the_explicit_classes_agree(directories, loaded):
    marian = transformers.MarianTokenizer.from_pretrained(directories["marian"])
    m2m100 = transformers.M2M100Tokenizer.from_pretrained(directories["m2m100"], src_lang="es", tgt_lang="en")
    nllb = transformers.NllbTokenizer.from_pretrained(
        directories["nllb"], src_lang="spa_Latn", tgt_lang="fra_Latn"
    )
    _assert_same(*loaded["marian"][:2], marian, HOSTILE[:6])
    cases = ((m2m100, "m2m100", "es", "en"), (nllb, "nllb", "spa_Latn", "fra_Latn"))
    for hf, kind, source, target in cases:
        src, tgt, _ = loaded[kind]
        _assert_same(src.for_language(source), tgt.for_language(target), hf, HOSTILE[:6])


def test_special_ids_languages_and_sizes(directories, loaded):
    for kind, (src, tgt, hf) in loaded.items():
        entries = config_entries(kind, directories[kind])
        assert src.vocab_size == tgt.vocab_size == entries["vocab_size"]
        assert (tgt.pad_id, tgt.eos_id, tgt.bos_id) == (
            hf.pad_token_id,
            hf.eos_token_id,
            entries["decoder_start_token_id"],
        )
        assert src.unk_id == hf.unk_token_id and src.hf_vocabulary() == [
            hf.convert_ids_to_tokens(i) for i in range(len(hf))
        ]
    marian_src, marian_tgt, hf = loaded["marian"]
    assert marian_src.languages == {
        "es": hf.convert_tokens_to_ids(">>es<<"),
        "fr": hf.convert_tokens_to_ids(">>fr<<"),
    }
    assert marian_src.prefix == marian_tgt.prefix == ()
    m2m_src, m2m_tgt, _ = loaded["m2m100"]
    assert m2m_src.prefix == (m2m100_language_id(directories["m2m100"], "en"),) and m2m_tgt.language == "es"
    assert len(m2m_src.languages) == 100 and m2m_src.vocab_size == len(loaded["m2m100"][2]) + 8
    nllb_src, nllb_tgt, hf = loaded["nllb"]
    assert len(nllb_src.languages) == 202 and nllb_tgt.prefix == (hf.convert_tokens_to_ids("spa_Latn"),)
    assert nllb_src.piece_to_id("<mask>") == len(hf) - 1 and nllb_src.special_ids >= set(
        nllb_src.languages.values()
    )


def test_bytes_round_trip_of_imported_tokenizers(loaded):
    for src, tgt, _ in loaded.values():
        for tokenizer in (src, tgt):
            again = tokenizer_from_bytes(tokenizer.to_bytes())
            assert isinstance(again, MappedTokenizer) and again == tokenizer
            assert [again.encode(t) for t in HOSTILE] == [tokenizer.encode(t) for t in HOSTILE]


@pytest.mark.parametrize("kind", list(KINDS))
def test_written_files_load_back_with_the_same_ids(kind, loaded, tmp_path):
    src, tgt, _ = loaded[kind]
    entries = write_tokenizer_files(tmp_path / "out", src, tgt)
    hf = transformers.AutoTokenizer.from_pretrained(tmp_path / "out")
    assert type(hf).__name__ == KINDS[kind][1]
    _assert_same(src, tgt, hf, HOSTILE)
    again = read_tokenizers(tmp_path / "out", {"model_type": KINDS[kind][0], **entries})
    assert again == (src, tgt)
    assert entries["pad_token_id"] == tgt.pad_id and entries["decoder_start_token_id"] == tgt.bos_id
    assert entries["vocab_size"] == src.vocab_size and entries["eos_token_id"] == tgt.eos_id
    assert entries.get("forced_bos_token_id") == (tgt.prefix[0] if tgt.prefix else None)


@pytest.mark.parametrize("joint", [True, False])
def test_our_own_tokenizers_written_as_marian(joint, tmp_path):
    src = Tokenizer.train(sentences(EN + ES if joint else EN), vocab_size=100)
    tgt = src if joint else Tokenizer.train(sentences(ES, seed=1), vocab_size=90)
    entries = write_tokenizer_files(tmp_path, src, tgt)
    hf = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert type(hf).__name__ == "MarianTokenizer"
    sizes = {"vocab_size": src.vocab_size, "decoder_vocab_size": tgt.vocab_size}
    ids = {"pad_token_id": 0, "eos_token_id": 3, "bos_token_id": 2, "decoder_start_token_id": 2}
    assert entries == {**ids, "forced_eos_token_id": 3, **sizes}
    texts = [t for t in HOSTILE if not t.startswith(">>")]  # MarianTokenizer reads a leading >>xx<< as a code
    for text in texts:
        assert hf(text).input_ids == src.encode(text) + [3]
        assert hf(text_target=text).input_ids == tgt.encode(text) + [3]
        ids = tgt.encode(text)
        assert hf.decode(ids, skip_special_tokens=True) == tgt.decode(ids)  # unknown pieces too
    assert hf(">>es<< the").input_ids[0] == 1  # the known difference: one (unknown) code token


def _copy(directory: Path, tmp_path: Path) -> Path:
    copy = tmp_path / directory.name
    shutil.copytree(directory, copy)
    return copy


def _removed(*names: str):
    return lambda directory: [(directory / name).unlink() for name in names]


def _written(name: str, text: str):
    return lambda directory: (directory / name).write_text(text, encoding="utf-8")


def _bpe_only(directory: Path) -> None:
    """An OPUS-MT model converted from a BPE Marian model: vocab.json and merges, no sentencepiece."""
    _removed("source.spm", "target.spm")(directory)
    _written("merges.txt", "#version: 0.2\n")(directory)


@pytest.mark.parametrize(
    ("kind", "damage", "message"),
    [
        ("marian", _removed("source.spm"), "no source.spm: restore it"),
        ("marian", _bpe_only, r"no source.spm: OPUS-MT models without sentencepiece files \(BPE\) cannot be"),
        ("marian", _written("vocab.json", "{not json"), "vocab.json is not valid JSON"),
        ("marian", _written("target.spm", "not a model"), "not a valid sentencepiece model"),
        ("marian", _written("vocab.json", '{"<unk>": 0, "a": 5}'), "token ids are not 0..1"),
        ("marian", _written(TOKENIZER_CONFIG, '{"tokenizer_class": "BertTokenizer"}'),
         "tokenizer_class 'BertTokenizer' is not supported"),
        ("m2m100", _written(TOKENIZER_CONFIG, '{"tokenizer_class": "T5Tokenizer"}'),
         "'T5Tokenizer' is not supported; an m2m_100 model needs M2M100Tokenizer or NllbTokenizer"),
        ("m2m100", _removed("sentencepiece.bpe.model"), "no sentencepiece.bpe.model; restore it"),
        ("m2m100", _written(TOKENIZER_CONFIG, '{"src_lang": "xx"}'), "src_lang 'xx' is not one"),
        ("nllb", _removed("sentencepiece.bpe.model"), "NLLB tokenizers without their sentencepiece"),
        ("nllb", _written("tokenizer.json", "[]"), "tokenizer.json holds a list, not a JSON object"),
    ],
)  # fmt: skip
def test_broken_directories_are_one_line_errors(kind, damage, message, directories, tmp_path):
    directory = _copy(directories[kind], tmp_path)
    damage(directory)
    with pytest.raises(UserError, match=message) as caught:
        read_tokenizers(directory, _config(kind, directories[kind]))
    assert "\n" not in str(caught.value)


def test_unknown_model_type_and_small_vocabulary(directories):
    with pytest.raises(UserError, match="model_type 'bart' has no tokenizer we can import"):
        read_tokenizers(directories["marian"], {"model_type": "bart"})
    with pytest.raises(UserError, match="vocab_size 10 is smaller than the tokenizer's"):
        read_tokenizers(directories["nllb"], {"model_type": "m2m_100", "vocab_size": 10})

"""Hugging Face tokenizer directories as the hub stores them, built from tiny sentencepiece models trained
on the fly: Marian (OPUS-MT: source.spm, target.spm, one joint vocab.json), M2M100 (vocab.json +
sentencepiece.bpe.model, language tokens after the vocabulary) and NLLB (sentencepiece.bpe.model +
tokenizer.json + tokenizer_config.json, made by transformers itself).

Each `*_tokenizer_dir(tmp_path)` writes a fresh subdirectory of `tmp_path` and returns it; the matching
`*_config_entries(directory)` gives the token ids and sizes the model's config.json needs, as the hub's
config.json has them (`tokenizer_dir(kind, ...)` and `config_entries(kind, ...)` choose them by kind).
Only the NLLB directory needs transformers to be built.
"""

from __future__ import annotations

import functools
import io
import json
import random
import shutil
from pathlib import Path

import sentencepiece as spm

EN = (
    "the a man woman dog cat sees loves finds house water bread light day night king "
    "Tom Mary London café naïve über 2024 3.5 don't it's"
).split()
ES = (
    "el un hombre mujer perro gato ve ama encuentra casa agua pan luz día noche rey "
    "Tomás María Londres niño año señor 2024 3,5 ¿qué? ¡sí!"
).split()
PUNCTUATION = (".", "!", "?", ",", ";", ":", ' "')

MARIAN_LANGUAGE_CODES = (">>es<<", ">>fr<<")  # target-language tokens of a multilingual OPUS-MT model
MARIAN_SOURCE_LANG, MARIAN_TARGET_LANG = "en", "es"
M2M100_SRC_LANG, M2M100_TGT_LANG = "en", "es"
NLLB_SRC_LANG, NLLB_TGT_LANG = "eng_Latn", "spa_Latn"
M2M100_MADEUP_WORDS = 8  # fairseq's padding of the embedding table, in config.json's vocab_size


def sentences(words: tuple[str, ...] | list[str], *, count: int = 400, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(words) for _ in range(rng.randint(2, 10))) + rng.choice(PUNCTUATION)
        for _ in range(count)
    ]


@functools.cache
def train_spm(side: str, model_type: str, vocab_size: int, special_ids: tuple[int, int, int]) -> bytes:
    """A sentencepiece model over `side`'s ("en"/"es"/"both") words, with sentencepiece's default
    normalisation (nmt_nfkc) as hub models have; `special_ids` = (unk, bos, eos), -1 = absent."""
    words = {"en": EN, "es": ES, "both": EN + ES}[side]
    unk, bos, eos = special_ids
    writer = io.BytesIO()
    spm.set_random_generator_seed(0)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences(words)), model_writer=writer, vocab_size=vocab_size,
        model_type=model_type, character_coverage=1.0, unk_id=unk, bos_id=bos, eos_id=eos, pad_id=-1,
        hard_vocab_limit=False, minloglevel=2, num_threads=1,
    )  # fmt: skip
    return writer.getvalue()


def pieces_of(model: bytes) -> list[str]:
    processor = spm.SentencePieceProcessor()
    processor.LoadFromSerializedProto(model)
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def _fresh(directory: Path) -> Path:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


# ---------------------------------------------------------------------------------------------- Marian
def marian_tokenizer_dir(tmp_path: Path) -> Path:
    """OPUS-MT files: two unigram models trained by Marian (eos=0, unk=1, no bos/pad), and the joint
    vocab.json HF's conversion writes: </s>=0, <unk>=1, the pieces of both models (not in sentencepiece's
    id order), the >>xx<< target-language codes, and <pad> last."""
    directory = _fresh(tmp_path / "hf-marian")
    source = train_spm("en", "unigram", 120, (1, -1, 0))
    target = train_spm("es", "unigram", 120, (1, -1, 0))
    (directory / "source.spm").write_bytes(source)
    (directory / "target.spm").write_bytes(target)
    pieces = [p for p in dict.fromkeys(pieces_of(source) + pieces_of(target)) if p not in ("</s>", "<unk>")]
    random.Random(1).shuffle(pieces)
    table = ["</s>", "<unk>", *pieces, *MARIAN_LANGUAGE_CODES, "<pad>"]
    _write_json(directory / "vocab.json", {piece: index for index, piece in enumerate(table)})
    _write_json(
        directory / "tokenizer_config.json",
        {"source_lang": MARIAN_SOURCE_LANG, "target_lang": MARIAN_TARGET_LANG, "separate_vocabs": False},
    )
    return directory


def marian_config_entries(directory: Path) -> dict[str, int]:
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    pad = vocab["<pad>"]
    return {
        "vocab_size": len(vocab), "decoder_vocab_size": len(vocab), "pad_token_id": pad,
        "eos_token_id": vocab["</s>"], "bos_token_id": vocab["</s>"], "decoder_start_token_id": pad,
        "forced_eos_token_id": vocab["</s>"],
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------- M2M100
def m2m100_tokenizer_dir(tmp_path: Path) -> Path:
    """facebook/m2m100_418M's files: a BPE model (unk=0, bos=1, eos=2) and fairseq's dictionary as
    vocab.json (<s>=0 <pad>=1 </s>=2 <unk>=3, then the pieces in fairseq's order, not sentencepiece's)."""
    directory = _fresh(tmp_path / "hf-m2m100")
    model = train_spm("both", "bpe", 150, (0, 1, 2))
    (directory / "sentencepiece.bpe.model").write_bytes(model)
    pieces = [p for p in pieces_of(model) if p not in ("<unk>", "<s>", "</s>")]
    random.Random(2).shuffle(pieces)
    table = ["<s>", "<pad>", "</s>", "<unk>", *pieces]
    _write_json(directory / "vocab.json", {piece: index for index, piece in enumerate(table)})
    languages = _m2m100_codes()
    _write_json(
        directory / "tokenizer_config.json",
        {
            "tokenizer_class": "M2M100Tokenizer", "src_lang": M2M100_SRC_LANG, "tgt_lang": M2M100_TGT_LANG,
            "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "unk_token": "<unk>",
            "pad_token": "<pad>", "language_codes": "m2m100", "num_madeup_words": M2M100_MADEUP_WORDS,
            "model_max_length": 1024,
        },
    )  # fmt: skip
    _write_json(
        directory / "special_tokens_map.json",
        {
            "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "unk_token": "<unk>",
            "pad_token": "<pad>", "additional_special_tokens": [f"__{code}__" for code in languages],
        },
    )  # fmt: skip
    return directory


def _m2m100_codes() -> list[str]:
    # the 100 codes of M2M100Tokenizer's FAIRSEQ_LANGUAGE_CODES["m2m100"], copied to keep this module
    # free of transformers (tests compare with transformers' list where it is installed)
    return (
        "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha "
        "he hi hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne "
        "nl no ns oc or pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh "
        "yi yo zh zu"
    ).split()


def m2m100_language_id(directory: Path, code: str) -> int:
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    return len(vocab) + _m2m100_codes().index(code)


def m2m100_config_entries(directory: Path) -> dict[str, int]:
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    size = len(vocab) + len(_m2m100_codes()) + M2M100_MADEUP_WORDS
    return {
        "vocab_size": size, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
        "decoder_start_token_id": 2,
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------- NLLB
def nllb_tokenizer_dir(tmp_path: Path) -> Path:
    """facebook/nllb-200's files: a BPE model (unk=0, bos=1, eos=2), and the tokenizer.json /
    tokenizer_config.json transformers writes for it, with the hub's layout (fairseq's <s> <pad> </s>
    <unk> = 0..3, the model's pieces shifted by one, the 202 language codes, then <mask>)."""
    from transformers import AutoTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    model = train_spm("both", "bpe", 150, (0, 1, 2))
    staging = _fresh(tmp_path / "hf-nllb-staging")
    (staging / "sentencepiece.bpe.model").write_bytes(model)
    size = len(pieces_of(model)) + 1  # fairseq's four specials in place of sentencepiece's three
    special = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
    added = {str(i): {"content": c, **special} for i, c in enumerate(["<s>", "<pad>", "</s>", "<unk>"])}
    added.update({str(size + i): {"content": c, **special} for i, c in enumerate(FAIRSEQ_LANGUAGE_CODES)})
    mask = {**special, "lstrip": True, "normalized": True}
    added[str(size + len(FAIRSEQ_LANGUAGE_CODES))] = {"content": "<mask>", **mask}
    _write_json(
        staging / "tokenizer_config.json",
        {
            "tokenizer_class": "NllbTokenizer", "added_tokens_decoder": added,
            "additional_special_tokens": list(FAIRSEQ_LANGUAGE_CODES), "src_lang": NLLB_SRC_LANG,
            "tgt_lang": NLLB_TGT_LANG, "legacy_behaviour": False, "bos_token": "<s>", "eos_token": "</s>",
            "unk_token": "<unk>", "pad_token": "<pad>", "sep_token": "</s>", "cls_token": "<s>",
            "mask_token": "<mask>", "model_max_length": 1024,
        },
    )  # fmt: skip
    directory = _fresh(tmp_path / "hf-nllb")
    AutoTokenizer.from_pretrained(staging).save_pretrained(directory)
    (directory / "sentencepiece.bpe.model").write_bytes(model)
    shutil.rmtree(staging)
    return directory


def nllb_config_entries(directory: Path) -> dict[str, int]:
    added = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]
    size = max(token["id"] for token in added) + 1
    return {
        "vocab_size": size, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
        "decoder_start_token_id": 2,
    }  # fmt: skip


def tokenizer_dir(kind: str, tmp_path: Path) -> Path:
    """The tokenizer directory of `kind` ("marian", "m2m100", "nllb"), written under `tmp_path`."""
    return _BY_KIND[kind][0](tmp_path)


def config_entries(kind: str, directory: Path) -> dict[str, int]:
    """What config.json needs for the tokenizer directory of `kind` in `directory`."""
    return _BY_KIND[kind][1](directory)


_BY_KIND = {
    "marian": (marian_tokenizer_dir, marian_config_entries),
    "m2m100": (m2m100_tokenizer_dir, m2m100_config_entries),
    "nllb": (nllb_tokenizer_dir, nllb_config_entries),
}

"""Subword tokenization with sentencepiece, with special ids fixed across every model.

pad=0, unk=1, bos=2, eos=3 in every model we train, so batches, losses and decoders can rely
on them without asking. Texts are normalised before they get here (corpus.normalize), so the
model is trained with sentencepiece's "identity" normalisation: decode(encode(text)) == text for
any text whose characters the model covers.

A model trained with language tokens among its user symbols (`__en__`, `__es__`: `language_token`) is
multilingual, as an imported M2M100/NLLB model is (seq2seq.inference.languages): `languages` lists
them, and `for_language(code)` gives the tokenizer whose encode() puts that language's token first.
"""

from __future__ import annotations

import copy
import io
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

from seq2seq.data.tokenizer_base import TokenizerBase
from seq2seq.errors import UserError

log = logging.getLogger(__name__)

MODEL_TYPES = ("unigram", "bpe", "char", "word")
_LANGUAGE_TOKEN = re.compile(r"__([A-Za-z][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*)__")
_USER_DEFINED = 4  # sentencepiece's ModelProto.SentencePiece.Type.USER_DEFINED


def is_language_token(piece: str) -> bool:
    """Whether a user symbol names a language (`__es__`) rather than being a plain tag (`<bt>`)."""
    return _LANGUAGE_TOKEN.fullmatch(piece) is not None


def language_token(code: str) -> str:
    """The piece that names language `code` ("es" -> "__es__", "spa_Latn" -> "__spa_Latn__")."""
    if not _LANGUAGE_TOKEN.fullmatch(f"__{code}__"):
        raise UserError(f"language code {code!r} must be letters, digits, '-' and '_' (e.g. es, spa_Latn)")
    return f"__{code}__"


class Tokenizer(TokenizerBase):
    """A trained sentencepiece model plus the special-id conventions of this project."""

    PAD_ID = 0
    UNK_ID = 1
    BOS_ID = 2
    EOS_ID = 3
    _special_ids = (PAD_ID, EOS_ID, UNK_ID, BOS_ID)

    def __init__(self, processor: spm.SentencePieceProcessor) -> None:
        ids = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
        if ids != (self.PAD_ID, self.UNK_ID, self.BOS_ID, self.EOS_ID):
            raise UserError(
                f"sentencepiece model has special ids pad/unk/bos/eos={ids}, expected (0, 1, 2, 3); "
                "train it with seq2seq (Tokenizer.train) or with --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3"
            )
        self._sp = processor
        # never text: unk too, as transformers' tokenizers drop it (an exported model decodes to our text)
        self._specials = {self.PAD_ID, self.UNK_ID, self.BOS_ID, self.EOS_ID}
        self._unmarked: spm.SentencePieceProcessor | None = None  # built at the first encode_unmarked
        self._languages = _language_tokens(processor)
        self._language: str | None = None
        self._specials |= set(self._languages.values())  # a language token is never text

    # ------------------------------------------------------------------ construction
    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        *,
        vocab_size: int,
        model_type: str = "unigram",
        model_path: str | Path | None = None,
        character_coverage: float = 1.0,
        max_sentences: int = 2_000_000,
        num_threads: int = 1,
        seed: int = 0,
        user_symbols: Sequence[str] = (),
    ) -> Tokenizer:
        """Train on ``texts`` and save to ``model_path`` when given; ``user_symbols`` (tags such as
        ``<bt>``) become pieces of their own, never split.

        A corpus too small for ``vocab_size`` gets a smaller vocabulary and a warning rather than
        an error, so tiny test corpora work with the default settings.
        """
        if model_type not in MODEL_TYPES:
            supported = ", ".join(MODEL_TYPES)
            raise UserError(f"tokenizer model_type={model_type!r} is not supported; use one of: {supported}")
        if vocab_size < 8:
            raise UserError(f"tokenizer vocab_size={vocab_size} is too small; use at least a few hundred")
        sentences = [t for t in texts if t]
        if not sentences:
            raise UserError("no text to train the tokenizer on; the training corpus is empty")
        try:
            model = _train_model(sentences, vocab_size=vocab_size, model_type=model_type, seed=seed,
                                 character_coverage=character_coverage, max_sentences=max_sentences,
                                 num_threads=num_threads, user_symbols=user_symbols)  # fmt: skip
        except RuntimeError as error:
            detail = str(error).strip().splitlines()[0][:200]
            raise UserError(f"sentencepiece cannot train this {model_type} model ({detail})") from None
        tokenizer = cls.from_bytes(model)
        if tokenizer.vocab_size < vocab_size:
            log.warning("the training text supports only %d of the %d requested pieces; using %d",
                        tokenizer.vocab_size, vocab_size, tokenizer.vocab_size)  # fmt: skip
        if model_path is not None:
            tokenizer.save(model_path)
        return tokenizer

    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        file = Path(path)
        if not file.is_file():
            raise UserError(f"{file}: no such sentencepiece model file")
        return cls.from_bytes(file.read_bytes())

    @classmethod
    def from_bytes(cls, model: bytes) -> Tokenizer:
        """Rebuild from ``to_bytes()`` output (what checkpoints store)."""
        processor = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(model)
        except (RuntimeError, OSError, TypeError) as error:
            raise UserError(f"not a valid sentencepiece model ({error})") from None
        return cls(processor)

    def to_bytes(self) -> bytes:
        return self._sp.serialized_model_proto()

    # ------------------------------------------------------------------ ids
    @property
    def vocab_size(self) -> int:
        return self._sp.get_piece_size()

    def for_language(self, code: str) -> Tokenizer:
        """The same model, with language `code`'s token put first by encode()."""
        if code not in self._languages:
            known = ", ".join(sorted(self._languages)) or "none"
            raise UserError(f"language {code!r} is not one of this tokenizer's languages: {known}")
        variant = copy.copy(self)
        variant._language = code
        return variant

    # ------------------------------------------------------------------ text <-> ids
    def encode(self, text: str) -> list[int]:
        """Piece ids of ``text``, after the prefix (a language token, if one was chosen); no bos or eos."""
        return [*self.prefix, *self._sp.encode(text)]

    def encode_unmarked(self, text: str) -> list[int]:
        """Piece ids of ``text`` without the word-start mark (▁) that ``encode`` puts in front of it: how
        sentencepiece splits text that goes on from what comes before, as in the middle of a sentence
        in a language written without spaces (a Chinese terminology constraint)."""
        if self._unmarked is None:
            self._unmarked = _without_word_start(self._sp)
        return self._unmarked.encode(text)

    def encode_batch(self, texts: Sequence[str], num_threads: int = 1) -> list[list[int]]:
        encoded = self._sp.encode(list(texts), num_threads=num_threads)
        return encoded if not self.prefix else [[*self.prefix, *ids] for ids in encoded]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``; pad, unk, bos, eos and language tokens are ignored wherever they are. Whitespace
        at either end (a lone "▁" piece first or last) is stripped, as encode() never keeps it. Both as
        MarianTokenizer, the tokenizer of a model exported to Hugging Face, decodes with
        skip_special_tokens=True (and as an imported model's MappedTokenizer decodes)."""
        return self._sp.decode([int(i) for i in ids if int(i) not in self._specials]).strip()

    def pieces(self, text: str) -> list[str]:
        """The pieces ``text`` splits into (labels for attention pictures)."""
        return self._sp.encode(text, out_type=str)

    def id_to_piece(self, index: int) -> str:
        return self._sp.id_to_piece(int(index))

    def piece_to_id(self, piece: str) -> int:
        """The id of a piece (unk's for a piece the model does not have)."""
        return self._sp.piece_to_id(piece)

    def pieces_of_vocabulary(self) -> list[str]:
        """Every piece, in id order (what an inference engine's vocabulary file lists)."""
        return [self._sp.id_to_piece(i) for i in range(self.vocab_size)]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Tokenizer) and self.language == other.language and self.to_bytes() == other.to_bytes()
        )

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size})"


def _language_tokens(processor: spm.SentencePieceProcessor) -> dict[str, int]:
    """code -> id of the model's language tokens: user-defined pieces named as `language_token` names them."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto.FromString(processor.serialized_model_proto())
    return {
        match.group(1): index
        for index, piece in enumerate(proto.pieces)
        if piece.type == _USER_DEFINED and (match := _LANGUAGE_TOKEN.fullmatch(piece.piece))
    }


def _without_word_start(processor: spm.SentencePieceProcessor) -> spm.SentencePieceProcessor:
    """The same model, told not to put the word-start mark in front of a text (add_dummy_prefix)."""
    from sentencepiece import sentencepiece_model_pb2  # needs protobuf, which tensorboard requires too

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(processor.serialized_model_proto())
    proto.normalizer_spec.add_dummy_prefix = False
    unmarked = spm.SentencePieceProcessor()
    unmarked.LoadFromSerializedProto(proto.SerializeToString())
    return unmarked


def _train_model(
    sentences: list[str], *, vocab_size: int, model_type: str, character_coverage: float, max_sentences: int,
    num_threads: int, seed: int, user_symbols: Sequence[str] = (),
) -> bytes:  # fmt: skip
    """Serialized sentencepiece model with this project's special ids and no text normalisation."""
    spm.set_random_generator_seed(seed)
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=writer, vocab_size=vocab_size, model_type=model_type,
        character_coverage=character_coverage, input_sentence_size=max_sentences, num_threads=num_threads,
        pad_id=Tokenizer.PAD_ID, unk_id=Tokenizer.UNK_ID, bos_id=Tokenizer.BOS_ID, eos_id=Tokenizer.EOS_ID,
        pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>", minloglevel=2,
        normalization_rule_name="identity", hard_vocab_limit=False, shuffle_input_sentence=True,
        **({"user_defined_symbols": list(user_symbols)} if user_symbols else {}),
    )  # fmt: skip
    return writer.getvalue()

"""A sentencepiece model whose pieces map to ids through an explicit table: the tokenizers of imported
Hugging Face models (MarianTokenizer, M2M100Tokenizer, NllbTokenizer), giving exactly their ids and text.

Those models number their tokens their own way (a vocab.json, fairseq's dictionary, sentencepiece's ids
shifted by one), have their own special ids and language tokens, and split and join text by rules that
differ a little per family. Each rule is reproduced here, with sentencepiece doing the segmentation:
- marian: text split on the special tokens' strings; a leading ">>xx<<" becomes one token
  (remove_language_code); the pieces of sentencepiece's encode; ids through vocab.json (unknown piece:
  unk). Decoding joins the pieces with a sentencepiece model (HF 5.x uses the source model when the
  vocabulary is joint), turns "▁" into spaces and strips the ends.
- m2m100: the same split (the "__xx__" language tokens are special tokens too), pieces through
  vocab.json; language tokens after the vocabulary; decoding with sentencepiece's decode.
- nllb: what the `tokenizers` library does with NLLB's converted BPE model: split on the special
  tokens, the model's charsmap applied its way (precompiled_charsmap.py), runs of spaces made one, "▁"
  for spaces and in front of every text segment, then sentencepiece's BPE; a space at the end of a text
  thus becomes a "▁" token. Decoding drops the "▁" of the first token and turns the others into spaces.

encode() gives the ids without eos but with `prefix` first (the language token an M2M100/NLLB model
expects at the start of the source or of the target); decode() drops every special id, as HF's
decode(skip_special_tokens=True) does.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property

import sentencepiece as spm

from seq2seq.data.precompiled_charsmap import PrecompiledCharsmap
from seq2seq.data.tokenizer_base import TokenizerBase
from seq2seq.errors import UserError

MAGIC = b"seq2seq-mapped-tokenizer 1\n"
KINDS = ("marian", "m2m100", "nllb")
WORD_START = "\u2581"
MASK_TOKEN = "<mask>"  # NLLB's: matched after normalisation, taking the spaces on its left with it
_CLEAN_UPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
              (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))  # fmt: skip


class MappedTokenizer(TokenizerBase):
    """Text <-> ids of a Hugging Face translation model's tokenizer (one side: source or target)."""

    def __init__(
        self, *, kind: str, model: bytes, vocabulary: Sequence[str], pad_id: int, eos_id: int, unk_id: int,
        bos_id: int, specials: Iterable[int], languages: Mapping[str, int] | None = None,
        language: str | None = None, decode_model: bytes | None = None, hf_size: int | None = None,
        clean_up_spaces: bool = False,
    ) -> None:  # fmt: skip
        self._kind = kind
        self._model = model
        self._decode_model = decode_model
        self._vocabulary = list(vocabulary)
        self._ids = {piece: index for index, piece in enumerate(self._vocabulary)}
        self._special_ids = (pad_id, eos_id, unk_id, bos_id)
        self._specials = frozenset(int(i) for i in specials)
        self._languages = dict(languages or {})
        self._language = language
        self._variants: dict[str, MappedTokenizer] = {}  # for_language's copies
        self._hf_size = len(self._vocabulary) if hf_size is None else hf_size
        self._clean_up_spaces = clean_up_spaces
        _check(self)
        self._sp = _processor(model)
        self._decoder = self._sp if decode_model is None else _processor(decode_model)
        self._split = _splitter([self._vocabulary[i] for i in self._specials if i < self._hf_size])

    # ------------------------------------------------------------------ ids
    @property
    def kind(self) -> str:
        """The Hugging Face tokenizer it reproduces: "marian", "m2m100" or "nllb"."""
        return self._kind

    @property
    def vocab_size(self) -> int:
        return len(self._vocabulary)

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids decode() drops: HF's special tokens (pad, eos, bos, unk, language tokens...)."""
        return self._specials

    @property
    def model_bytes(self) -> bytes:
        """The sentencepiece model that splits this side's text."""
        return self._model

    @property
    def clean_up_spaces(self) -> bool:
        """Whether decode() applies HF's clean_up_tokenization (" ." -> "." ...), as the model's files say."""
        return self._clean_up_spaces

    def hf_vocabulary(self) -> list[str]:
        """The names of the ids Hugging Face's tokenizer has (the table less the made-up words after it)."""
        return self._vocabulary[: self._hf_size]

    def for_language(self, code: str) -> MappedTokenizer:
        """A copy whose prefix is the language token of `code` ("es", "spa_Latn"; or the token itself)."""
        key = code if code in self._languages else _key_of_token(self._languages, self._ids.get(code))
        if key is None:
            known = ", ".join(sorted(self._languages)) or "none"
            raise UserError(
                f"language {code!r} is not one of this {self.kind} tokenizer's languages: {known}"
            )
        if key == self._language:
            return self
        if key not in self._variants:
            self._variants[key] = MappedTokenizer(**{**self._fields(), "language": key})
        return self._variants[key]

    # ------------------------------------------------------------------ text <-> ids
    def encode(self, text: str) -> list[int]:
        """Ids of `text` with the prefix first, without eos (callers append it)."""
        return [*self.prefix, *self._encode_text(text, marked=True)]

    def encode_unmarked(self, text: str) -> list[int]:
        """Ids of `text` as it splits going on from what comes before: no word-start mark in front, no
        prefix (a constraint in the middle of a sentence)."""
        return self._encode_text(text, marked=False)

    def encode_batch(self, texts: Sequence[str], num_threads: int = 1) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, special ids (pad, eos, bos, unk, language tokens) dropped wherever they are."""
        kept = [int(i) for i in ids]
        kept = [i for i in kept if 0 <= i < len(self._vocabulary) and i not in self._specials]
        if self.kind == "nllb":
            return _metaspace_decode([self._vocabulary[i] for i in kept if i < self._hf_size])
        text = self._join(kept)
        if self._clean_up_spaces:
            for before, after in _CLEAN_UPS:
                text = text.replace(before, after)
        return text

    def pieces(self, text: str) -> list[str]:
        return [self._vocabulary[i] for i in self.encode(text)]

    def id_to_piece(self, index: int) -> str:
        return self._vocabulary[int(index)]

    def piece_to_id(self, piece: str) -> int:
        return self._ids.get(piece, self.unk_id)

    def pieces_of_vocabulary(self) -> list[str]:
        return list(self._vocabulary)

    # ------------------------------------------------------------------ the families' rules
    def _encode_text(self, text: str, *, marked: bool) -> list[int]:
        ids: list[int] = []
        for segment, special in self._split(text):
            if special:
                ids.append(self._ids[segment])
            elif self.kind == "nllb":
                ids.extend(self._nllb_ids(segment, marked=marked))
            else:
                ids.extend(self._python_ids(segment, marked=marked))
        return ids

    def _python_ids(self, segment: str, *, marked: bool) -> list[int]:
        """MarianTokenizer's and M2M100Tokenizer's _tokenize, then vocab.json."""
        code: list[int] = []
        if self.kind == "marian" and segment.startswith(">>") and (end := segment.find("<<")) != -1:
            code = [self._ids.get(segment[: end + 2], self.unk_id)]
            segment = segment[end + 2 :]
        processor = self._sp if marked else self._unmarked
        return code + [self._ids.get(piece, self.unk_id) for piece in processor.encode(segment, out_type=str)]

    def _nllb_ids(self, segment: str, *, marked: bool) -> list[int]:
        if self._charsmap is not None:
            segment = re.sub(" {2,}", " ", self._charsmap.normalize(segment))
        ids: list[int] = []
        for part, special in _split_mask(segment, MASK_TOKEN in self._ids):
            if special:
                ids.append(self._ids[MASK_TOKEN])
                continue
            part = part.replace(" ", WORD_START)
            if marked and part and not part.startswith(WORD_START):
                part = WORD_START + part
            pieces = self._nllb_bpe.encode(part, out_type=str) if part else []
            ids.extend(self._ids.get(piece, self.unk_id) for piece in pieces)
        return ids

    def _join(self, ids: list[int]) -> str:
        """MarianTokenizer's / M2M100Tokenizer's convert_tokens_to_string (M2M100 ids past its
        tokenizer, fairseq's made-up words, come out as a literal "<unk>")."""
        unk = self._vocabulary[self.unk_id]
        tokens = [self._vocabulary[i] if i < self._hf_size else unk for i in ids]
        if self.kind == "marian":
            return self._decoder.decode_pieces(tokens).replace(WORD_START, " ").strip()
        out, run = "", []
        for token in tokens:
            if token == unk:
                out, run = out + self._decoder.decode(run) + token, []
            else:
                run.append(token)
        return (out + self._decoder.decode(run)).strip()

    @cached_property
    def _unmarked(self) -> spm.SentencePieceProcessor:
        return _processor(_edited(self._model, add_dummy_prefix=False))

    @cached_property
    def _charsmap(self) -> PrecompiledCharsmap | None:
        blob = _proto(self._model).normalizer_spec.precompiled_charsmap
        return PrecompiledCharsmap(blob) if blob else None

    @cached_property
    def _nllb_bpe(self) -> spm.SentencePieceProcessor:
        """The model without its own normalisation: the text arrives normalised and marked."""
        return _processor(_edited(self._model, add_dummy_prefix=False, plain=True))

    # ------------------------------------------------------------------ serialisation
    def _fields(self) -> dict:
        return {
            "kind": self.kind, "model": self._model, "decode_model": self._decode_model,
            "vocabulary": self._vocabulary, "pad_id": self.pad_id, "eos_id": self.eos_id,
            "unk_id": self.unk_id, "bos_id": self.bos_id, "specials": sorted(self._specials),
            "languages": self.languages, "language": self.language, "hf_size": self._hf_size,
            "clean_up_spaces": self._clean_up_spaces,
        }  # fmt: skip

    @cached_property
    def _bytes(self) -> bytes:
        fields = self._fields()
        for name in ("model", "decode_model"):
            fields[name] = None if fields[name] is None else base64.b64encode(fields[name]).decode("ascii")
        return MAGIC + json.dumps(fields, sort_keys=True, ensure_ascii=False).encode("utf-8")

    def to_bytes(self) -> bytes:
        return self._bytes

    @classmethod
    def from_bytes(cls, data: bytes) -> MappedTokenizer:
        if not data.startswith(MAGIC):
            raise UserError("not a seq2seq mapped tokenizer (its first line is not the format's header)")
        try:
            fields = json.loads(data[len(MAGIC) :].decode("utf-8"))
            for name in ("model", "decode_model"):
                if fields[name] is not None:
                    fields[name] = base64.b64decode(fields[name], validate=True)
            return cls(**fields)
        except (ValueError, TypeError, KeyError, binascii.Error, RuntimeError) as error:
            detail = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
            raise UserError(f"not a valid seq2seq mapped tokenizer ({detail})") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MappedTokenizer) and self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        return (
            f"MappedTokenizer(kind={self.kind!r}, vocab_size={self.vocab_size}, language={self.language!r})"
        )


def _check(tokenizer: MappedTokenizer) -> None:
    """Field consistency (what from_bytes trusts): ValueError naming the first problem."""
    size = tokenizer.vocab_size
    if tokenizer.kind not in KINDS:
        raise ValueError(f"kind {tokenizer.kind!r} is not one of {', '.join(KINDS)}")
    if len(tokenizer._ids) != size:
        raise ValueError("the vocabulary names a token twice")
    if not 0 < tokenizer._hf_size <= size:
        raise ValueError(f"hf_size {tokenizer._hf_size} is outside 1..{size}")
    named = [*tokenizer._special_ids, *tokenizer._specials, *tokenizer._languages.values()]
    if any(not isinstance(i, int) or not 0 <= i < size for i in named):
        raise ValueError(f"a special or language id is outside the vocabulary of {size}")
    if tokenizer.language is not None and tokenizer.language not in tokenizer._languages:
        raise ValueError(f"language {tokenizer.language!r} has no token")


def _key_of_token(languages: Mapping[str, int], index: int | None) -> str | None:
    return next((key for key, value in languages.items() if value == index), None)


def piece_names(model: bytes) -> list[str]:
    """A sentencepiece model's pieces in its id order."""
    processor = _processor(model)
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def _processor(model: bytes) -> spm.SentencePieceProcessor:
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except (RuntimeError, OSError, TypeError) as error:
        raise ValueError(f"not a valid sentencepiece model ({error})") from None
    return processor


def _proto(model: bytes):  # sentencepiece_model_pb2.ModelProto (needs protobuf, a dependency)
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    return proto


def _edited(model: bytes, *, add_dummy_prefix: bool, plain: bool = False) -> bytes:
    """The model with another dummy-prefix setting; `plain`: also no normalisation, no whitespace
    trimming and no byte fallback (NLLB's converted BPE has none: unknown characters are unk)."""
    proto = _proto(model)
    proto.normalizer_spec.add_dummy_prefix = add_dummy_prefix
    if plain:
        proto.normalizer_spec.name = "identity"
        proto.normalizer_spec.precompiled_charsmap = b""
        proto.normalizer_spec.remove_extra_whitespaces = False
        proto.trainer_spec.byte_fallback = False
    return proto.SerializeToString()


def _splitter(tokens: Sequence[str]):
    """A function cutting text into (segment, is_special) at the special tokens' strings, leftmost and
    longest first (HF's added-token split); NLLB's <mask> is matched later, after normalisation."""
    names = sorted((t for t in tokens if t and t != MASK_TOKEN), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(name) for name in names)) if names else None

    def split(text: str) -> list[tuple[str, bool]]:
        if pattern is None:
            return [(text, False)] if text else []
        segments, start = [], 0
        for match in pattern.finditer(text):
            if match.start() > start:
                segments.append((text[start : match.start()], False))
            segments.append((match.group(), True))
            start = match.end()
        return segments + ([(text[start:], False)] if start < len(text) else [])

    return split


def _split_mask(text: str, has_mask: bool) -> list[tuple[str, bool]]:
    if not has_mask or MASK_TOKEN not in text:
        return [(text, False)] if text else []
    segments: list[tuple[str, bool]] = []
    for index, part in enumerate(re.split(r"\s*" + re.escape(MASK_TOKEN), text)):
        if index:
            segments.append((MASK_TOKEN, True))
        if part:
            segments.append((part, False))
    return segments


def _metaspace_decode(tokens: list[str]) -> str:
    """tokenizers' Metaspace decoder: "▁" is a space, except in the first token, where it is dropped."""
    return "".join(
        t.replace(WORD_START, "") if i == 0 else t.replace(WORD_START, " ") for i, t in enumerate(tokens)
    )

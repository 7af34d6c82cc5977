"""What every kind of tokenizer shares: its special ids, the language token put first, and saving.

Our own Tokenizer and an imported model's MappedTokenizer keep their special ids and language tokens in
the same fields, so one implementation reads them for both (the TextTokenizer surface of
seq2seq.data.tokenizer_formats) and the two kinds cannot drift apart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import overload

from seq2seq.files import atomic_output


class SpecialId:
    """A read-only tokenizer attribute: entry `index` of its `_special_ids` (pad, eos, unk, bos)."""

    def __init__(self, index: int) -> None:
        self.index = index

    @overload
    def __get__(self, tokenizer: None, owner: type) -> SpecialId: ...
    @overload
    def __get__(self, tokenizer: TokenizerBase, owner: type | None = None) -> int: ...
    def __get__(self, tokenizer: TokenizerBase | None, owner: type | None = None) -> SpecialId | int:
        return self if tokenizer is None else tokenizer._special_ids[self.index]

    def __set__(self, tokenizer: TokenizerBase, value: int) -> None:
        raise AttributeError("a tokenizer's special ids are fixed by its model")


class TokenizerBase(ABC):
    """The special ids and language prefix of a tokenizer, read from the fields its class sets.

    `_special_ids`: (pad, eos, unk, bos); `_languages`: language code -> its token's id;
    `_language`: the code whose token encode() puts first, or None.
    """

    _special_ids: tuple[int, int, int, int]
    _languages: dict[str, int]
    _language: str | None

    pad_id = SpecialId(0)
    eos_id = SpecialId(1)
    unk_id = SpecialId(2)
    bos_id = SpecialId(3)  # the decoder's start token (ours: bos; Marian: pad; M2M100/NLLB: eos)

    @property
    def prefix(self) -> tuple[int, ...]:
        """The ids encode() puts before the text: the token of `language`, if any."""
        return () if self._language is None else (self._languages[self._language],)

    @property
    def languages(self) -> dict[str, int]:
        """Language code ("es", "spa_Latn") -> its token's id; {} for a model without language tokens."""
        return dict(self._languages)

    @property
    def language(self) -> str | None:
        """The code whose token encode() puts first (`for_language`), or None."""
        return self._language

    @abstractmethod
    def to_bytes(self) -> bytes:
        """The tokenizer as the bytes a checkpoint stores (each kind writes its own format)."""

    def save(self, path: str | Path) -> None:
        """Write `to_bytes()` atomically (a temporary of this host and process, then rename): no
        half-written files, even when jobs on several hosts fill one cache."""
        with atomic_output(Path(path)) as handle:
            handle.write(self.to_bytes())

"""The tokenizers a checkpoint or an exported model can hold, and reading either back from its bytes.

A checkpoint stores `tokenizer.to_bytes()`: a sentencepiece model for our own Tokenizer, a header line
plus JSON for a MappedTokenizer (an imported Hugging Face model's). Everything that rebuilds a tokenizer
goes through tokenizer_from_bytes / tokenizer_from_file, and everything that uses one relies only on
the TextTokenizer surface both classes have.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from seq2seq.data.mapped_tokenizer import MAGIC, MappedTokenizer
from seq2seq.data.tokenizer import Tokenizer


@runtime_checkable
class TextTokenizer(Protocol):
    """Text <-> ids with the special ids a model was trained with (not always pad=0 ... eos=3)."""

    @property
    def vocab_size(self) -> int: ...
    @property
    def pad_id(self) -> int: ...
    @property
    def unk_id(self) -> int: ...
    @property
    def bos_id(self) -> int: ...
    @property
    def eos_id(self) -> int: ...

    @property
    def prefix(self) -> tuple[int, ...]: ...  # ids encode() puts first (a language code), () for none
    @property
    def languages(self) -> dict[str, int]: ...  # language code -> token id, {} for none
    @property
    def language(self) -> str | None: ...  # the language of `prefix`, if any
    def encode(self, text: str) -> list[int]: ...
    def encode_unmarked(self, text: str) -> list[int]: ...
    def encode_batch(self, texts: Sequence[str], num_threads: int = 1) -> list[list[int]]: ...
    def decode(self, ids: Iterable[int]) -> str: ...
    def pieces(self, text: str) -> list[str]: ...
    def id_to_piece(self, index: int) -> str: ...
    def piece_to_id(self, piece: str) -> int: ...
    def pieces_of_vocabulary(self) -> list[str]: ...
    def to_bytes(self) -> bytes: ...
    def save(self, path: str | Path) -> None: ...


def tokenizer_from_bytes(data: bytes) -> Tokenizer | MappedTokenizer:
    """The tokenizer whose `to_bytes()` gave `data`; UserError when it is neither kind."""
    if data.startswith(MAGIC):
        return MappedTokenizer.from_bytes(data)
    return Tokenizer.from_bytes(data)


def tokenizer_from_file(path: str | Path) -> Tokenizer | MappedTokenizer:
    """The tokenizer saved in `path` (a sentencepiece model file or a saved MappedTokenizer)."""
    file = Path(path)
    if file.is_file():
        with file.open("rb") as handle:
            if handle.read(len(MAGIC)) == MAGIC:
                return MappedTokenizer.from_bytes(file.read_bytes())
    return Tokenizer.from_file(file)

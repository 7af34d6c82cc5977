"""What the pipeline (seq2seq.inference.pipeline, .prepared) reads of a Translator: its tokenizers, its
engine and its settings. A Protocol, so that the pipeline's modules do not import the Translator that
calls them."""

from __future__ import annotations

import re
from typing import Protocol

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.engines import Engine
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.markup_text import AlignmentSource
from seq2seq.inference.rerank import QualityScorer


class TranslationSetup(Protocol):
    """A Translator as the pipeline sees it (seq2seq.inference.translator.Translator is the one)."""

    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    engine: Engine
    options: SearchOptions
    max_input_tokens: int
    long_lines: str
    glossary: Glossary | None
    quality: QualityScorer | None
    rerank_weight: float | None
    markup: str
    markup_pattern: re.Pattern[str]
    languages: tuple[str, str] | None  # (source, target) a one-pair model's training config names

    def for_languages(self, *, src_lang: str | None = None, tgt_lang: str | None = None) -> TranslationSetup:
        """The same setup reading `src_lang` and writing `tgt_lang` (None: as now)."""
        ...

    def check_languages(self) -> None:
        """A one-line UserError when a multilingual model has no language chosen on a side."""
        ...

    def aligner(self) -> AlignmentSource:
        """What putting markup back reads: the model's cross-attention and the tokenizers."""
        ...


__all__ = ["TranslationSetup"]

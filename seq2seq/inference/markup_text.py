"""A Translator's texts with inline markup (`markup=`): tags, entities and placeholders taken out before
the search (seq2seq.inference.markup) and put back into each translation by the alignment of its pieces
to the source's (seq2seq.inference.alignment, seq2seq.inference.tag_projection).

`markup`: "auto" (the default) reads a text as markup when it holds a tag, an entity or a placeholder;
"true" reads every text as markup (its translation's `<`, `>` and `&` are escaped even where it had no
tag); "false" reads every text as plain text, as before markup handling existed.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError
from seq2seq.inference.alignment import (
    CrossAttending,
    alignment_position,
    column_links,
    most_attended,
    proportional_links,
)
from seq2seq.inference.confidence import Translation
from seq2seq.inference.languages import forced_codes, languages_of, without_language_code
from seq2seq.inference.markup import Marked, has_markup, parse_markup
from seq2seq.inference.piece_spans import piece_spans
from seq2seq.inference.results import by_rank
from seq2seq.inference.tag_projection import restore_markup

log = logging.getLogger(__name__)

MARKUP_MODES = ("auto", "true", "false")


def markup_setting(value: Any, *, setting: str = "markup") -> str:
    """ "auto", "true" or "false" from a setting (YAML and Hydra make true/false booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value not in MARKUP_MODES:
        raise UserError(f"{setting}={value!r} is not supported; choose {', '.join(MARKUP_MODES)}")
    return str(value)


def take_out(texts: Sequence[str], mode: str, pattern: re.Pattern[str]) -> list[Marked | None]:
    """Per text, its markup taken out (None: read as plain text)."""
    if mode == "false":
        return [None] * len(texts)
    marked: list[Marked | None] = []
    for text in texts:
        if mode == "true":
            found = parse_markup(text, pattern)
            marked.append(dataclasses.replace(found, escape=True))
        else:
            marked.append(parse_markup(text, pattern) if has_markup(text, pattern) else None)
    return marked


@dataclass(frozen=True)
class AlignmentSource:
    """What putting markup back reads: the model whose cross-attention aligns the pieces (None: an engine
    that gives none, such as CTranslate2), the device it runs on and the tokenizers."""

    model: nn.Module | None
    device: torch.device
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer


def put_back(
    source: AlignmentSource,
    marked: Sequence[Marked | None],
    owners: Sequence[int],
    sources: Sequence[Sequence[int]],
    results: list[list[Hypothesis]],
    ranked: list[list[Translation]],
) -> list[list[Translation]]:
    """`ranked` (per text, its n-best Translations of the plain texts) with each marked text's markup put
    back into every one of its translations. `sources`, `owners`, `results`: the search's pieces, whose
    text each is, and their hypotheses (Translator.translate's)."""
    if not any(m is not None for m in marked):
        return ranked
    aligner = _Aligner(source)
    ranks = by_rank(owners, len(marked), results)
    pieces_of: list[list[int]] = [[] for _ in marked]
    for piece, owner in enumerate(owners):
        if results[piece]:
            pieces_of[owner].append(piece)
    chunks_of = {
        index: [sources[p] for p in pieces_of[index]] for index, m in enumerate(marked) if m is not None
    }
    jobs = [(list(source), list(hypothesis.tokens)) for index, chunks in chunks_of.items()
            for parts in ranks[index] for source, hypothesis in zip(chunks, parts)]  # fmt: skip
    columns = iter(aligner.columns(jobs))
    out = []
    for index, (text_marked, translations) in enumerate(zip(marked, ranked)):
        if text_marked is None:
            out.append(translations)
            continue
        chunks = chunks_of[index]
        out.append([
            dataclasses.replace(t, text=aligner.restore(text_marked, chunks, parts, t.text, columns))
            for t, parts in zip(translations, ranks[index])
        ])  # fmt: skip
    aligner.report(len(chunks_of))
    return out


class _Aligner:
    """Links between a text's source pieces and its translation's, from the Translator's model (its
    cross-attention) or, where it has none, proportional; then the markup restored by them."""

    def __init__(self, source: AlignmentSource) -> None:
        self.source = source
        model = source.model
        self.model = model if isinstance(model, CrossAttending) else None
        self.stride = int(model.config.get("cross_downsample", 1)) if self.model is not None else 1
        # what alignment=true reads too: a guided model's alignment head, else alignment_position's rule
        self.layer, self.attention_head = alignment_position(model.config if self.model is not None else {})
        # the language codes a source may start with: sources of one call can come from several
        # languages' tokenizers (language_columns, the server), so each source's own count is used
        self.codes = frozenset(languages_of(source.src_tokenizer).values())
        self.forced = forced_codes(source.src_tokenizer, source.tgt_tokenizer)  # a target code forced first

    def columns(self, jobs: list[tuple[list[int], list[int]]]) -> list[list[int] | None]:
        """Per (source, output tokens) job, each output token's most attended source column, all in
        batches (None per job without a model's attention: restore aligns those by position)."""
        if self.model is None or not jobs:
            return [None] * len(jobs)
        tokenizer = self.source.tgt_tokenizer
        try:
            found = most_attended(self.model, jobs, pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id,
                                  device=self.source.device, layer=self.layer,
                                  head=self.attention_head)  # fmt: skip
        except UserError:  # a decoder-only model: no cross-attention
            self.model = None
            return [None] * len(jobs)
        return list(found)

    def restore(
        self, marked: Marked, chunks: list[Sequence[int]], parts: list[Hypothesis], text: str, columns: Any
    ) -> str:
        """`text` (the translation of marked.plain, chunk by chunk: `parts`) with the markup put back;
        `columns` yields each chunk's most attended source columns (`columns()`, in this order)."""
        src_tokenizer, tgt_tokenizer = self.source.src_tokenizer, self.source.tgt_tokenizer
        source_pieces: list[str] = []
        target_pieces: list[str] = []
        links: list[tuple[int, int]] = []
        for source, hypothesis in zip(chunks, parts):
            head = self._head(source)
            body = list(source[head:-1])  # the chunk's own tokens: no language code, no eos
            own = list(without_language_code(hypothesis, self.forced).tokens)
            codes = (head, len(hypothesis.tokens) - len(own))
            for s, t in self._links(next(columns), codes, len(body), len(own)):
                links.append((s + len(source_pieces), t + len(target_pieces)))
            source_pieces += [src_tokenizer.id_to_piece(i) for i in body]
            target_pieces += [tgt_tokenizer.id_to_piece(i) for i in own]
        return restore_markup(
            marked, piece_spans(marked.plain, source_pieces), text, piece_spans(text, target_pieces), links
        )

    def _head(self, source: Sequence[int]) -> int:
        """How many language codes start `source` (its tokenizer's prefix)."""
        count = 0
        while count < len(source) and source[count] in self.codes:
            count += 1
        return count

    def _links(
        self, columns: list[int] | None, codes: tuple[int, int], body: int, own: int
    ) -> list[tuple[int, int]]:
        """Links between the body's pieces and the output's own; `codes`: the language codes before each."""
        if columns is None:
            return proportional_links(body, own)
        links = column_links(columns, self.stride, codes=codes)
        return [(s, t) for s, t in links if s < body]

    def report(self, count: int) -> None:
        how = (
            "the model's cross-attention"
            if self.model is not None
            else "position (this engine gives no attention)"
        )
        log.info("markup: %d text(s) with markup, put back into their translations by %s", count, how)

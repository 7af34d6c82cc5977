"""(source, translation) text pairs to the encoder-only model's input.

Each side is tokenized with its own tokenizer (the translation model's) and ends with eos. Together a
pair must fit the model's positions (`max_positions`); a longer pair is truncated, the longer side
first, keeping each side's eos, and the count is reported to the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from seq2seq.data.tokenizer_formats import TextTokenizer


@dataclass
class EncodedPairs:
    """Token ids per pair (both ending in eos; [] and [] for a pair with an empty side)."""

    sources: list[list[int]]
    translations: list[list[int]]
    truncated: int  # pairs shortened to fit the positions


def fit_pair(source: list[int], translation: list[int], limit: int) -> tuple[list[int], list[int]]:
    """Shorten the longer side (before its eos) until both fit `limit` tokens together."""
    source, translation = list(source), list(translation)
    while len(source) + len(translation) > limit:
        longer = source if len(source) >= len(translation) else translation
        if len(longer) <= 1:
            break
        del longer[-2]  # the last token before eos
    return source, translation


def encode_pairs(
    src_tokenizer: TextTokenizer,
    tgt_tokenizer: TextTokenizer,
    sources: Sequence[str],
    translations: Sequence[str],
    *,
    max_positions: int,
) -> EncodedPairs:
    """Tokenize every pair; an empty side makes the pair empty (it gets no score)."""
    encoded = EncodedPairs([], [], 0)
    for source, translation in zip(sources, translations):
        if not source.strip() or not translation.strip():
            encoded.sources.append([])
            encoded.translations.append([])
            continue
        src = src_tokenizer.encode(source) + [src_tokenizer.eos_id]
        hyp = tgt_tokenizer.encode(translation) + [tgt_tokenizer.eos_id]
        if len(src) + len(hyp) > max_positions:
            src, hyp = fit_pair(src, hyp, max_positions)
            encoded.truncated += 1
        encoded.sources.append(src)
        encoded.translations.append(hyp)
    return encoded


def pad_rows(rows: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Shapes: B token lists -> (B, longest) right-padded with pad_id."""
    out = torch.full((len(rows), max(len(row) for row in rows)), pad_id, dtype=torch.long)
    for index, row in enumerate(rows):
        out[index, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


__all__ = ["EncodedPairs", "encode_pairs", "fit_pair", "pad_rows"]

"""Alignments of a multilingual model count words, not language codes: the source's leading code
(M2M100/NLLB) and the target code every search forces are left out of the "src-tgt" pairs, so the
pairs of a multilingual model are those of the same weights read without the codes."""

from __future__ import annotations

from pathlib import Path

import torch
from multilingual_model import OPTIONS, multilingual_checkpoint

from seq2seq.inference.alignment import argmax_links
from seq2seq.inference.attention_output import language_codes
from seq2seq.inference.translator import Translator


def test_pairs_skip_the_codes_and_shift_the_source_positions() -> None:
    weights = torch.tensor(
        [[0.9, 0.1, 0.0, 0.0],  # the forced target code: no pair
         [0.1, 0.2, 0.7, 0.0],  # word 0 -> source column 2 = source word 1 (after one code)
         [0.8, 0.1, 0.1, 0.0],  # word 1 -> the source code: no pair
         [0.0, 0.6, 0.2, 0.2]]  # word 2 -> source word 0
    )  # fmt: skip  # (T, S)
    assert argmax_links(weights, 4, 1, codes=(1, 1)) == [(1, 0), (0, 2)]
    assert argmax_links(weights, 4, 1, codes=(0, 0)) == [(0, 0), (2, 1), (0, 2), (1, 3)]  # as before


def test_a_multilingual_translation_counts_its_own_tokens(tmp_path: Path) -> None:
    translator = Translator.from_checkpoint(multilingual_checkpoint(tmp_path / "model.pt"), options=OPTIONS)
    encoded = translator.encode(["the man sees the dog"])
    (best,) = translator.search(encoded.sources)[0][:1]
    source_codes, target_codes = language_codes(translator, best)
    assert (source_codes, target_codes) == (1, 1)
    assert encoded.sources[0][0] == translator.src_tokenizer.languages["en"]
    assert best.tokens[0] == translator.tgt_tokenizer.languages["es"]
    weights = torch.rand(len(best.tokens) + 1, len(encoded.sources[0]))  # (T, S): any weights
    pairs = argmax_links(weights, len(best.tokens), 1, codes=(source_codes, target_codes))
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    assert max(targets) < len(best.tokens) - 1 and min(sources) >= 0
    assert max(sources) < len(encoded.sources[0]) - 1  # the source's eos is its last column

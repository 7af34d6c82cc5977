"""Our sinusoid layouts and position offset against Hugging Face's own position modules: the fairseq layout
counted from 2 is M2M100's (and NLLB's), the standard layout from 0 is MarianMT's."""

from __future__ import annotations

import pytest
import torch

from seq2seq.nn.positional import SinusoidalPositions

pytest.importorskip("transformers")

from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding
from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding


@pytest.mark.parametrize("dim", [16, 64])
def test_fairseq_layout_with_offset_two_is_m2m100s_positions(dim: int) -> None:
    pad = 1  # M2M100's and NLLB's padding id: real tokens sit at positions pad + 1 + t
    theirs = M2M100SinusoidalPositionalEmbedding(1024, dim, padding_idx=pad)
    tokens = torch.full((2, 300), 7)
    expected = theirs(input_ids=tokens)[0]  # (300, D)
    ours = SinusoidalPositions(dim, layout="fairseq", offset=pad + 1)(torch.arange(300))
    assert torch.equal(ours, expected)  # the same float32 computation, bit for bit
    cached = theirs(input_ids=tokens[:, :1], cache_length=41)[0, 0]  # a decoding step at column 41
    assert torch.equal(SinusoidalPositions(dim, layout="fairseq", offset=2)(torch.tensor([41]))[0], cached)


@pytest.mark.parametrize("dim", [16, 64])
def test_standard_layout_from_zero_is_marians_positions(dim: int) -> None:
    theirs = MarianSinusoidalPositionalEmbedding(512, dim)
    with torch.no_grad():
        theirs.weight.copy_(theirs.create_weight())  # what _init_weights fills in
    expected = theirs(torch.Size([1, 512]))  # (512, D), from float64 numpy
    ours = SinusoidalPositions(dim)(torch.arange(512))
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-4)  # float32 angles up to 511 radians

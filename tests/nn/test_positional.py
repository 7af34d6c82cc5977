"""Sinusoidal, learned, rotary and ALiBi positions against their closed forms."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.nn.positional import (
    LearnedPositions,
    RotaryEmbedding,
    SinusoidalPositions,
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    sinusoid_table,
)


def test_sinusoid_table_matches_the_paper_formula() -> None:
    dim = 8
    table = sinusoid_table(torch.arange(50), dim)
    assert table.shape == (50, dim)
    # Frequency i: angle = pos / 10000^(2i/d); sines in the first half, cosines in the second.
    for pos in (0, 1, 7, 49):
        for i in range(dim // 2):
            angle = pos / 10000 ** (2 * i / dim)
            assert table[pos, i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, dim // 2 + i].item() == pytest.approx(math.cos(angle), abs=1e-6)
    # A few entries by hand: position 0 is (0,0,0,0,1,1,1,1); position 1, frequency 0 is (sin 1, cos 1);
    # position 1, frequency 1 has angle 1 / 10000^(1/4) = 0.1.
    assert torch.equal(table[0], torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]))
    assert table[1, 0].item() == pytest.approx(0.8414709848, abs=1e-6)
    assert table[1, 4].item() == pytest.approx(0.5403023059, abs=1e-6)
    assert table[1, 1].item() == pytest.approx(math.sin(0.1), abs=1e-6)
    assert table[1, 5].item() == pytest.approx(math.cos(0.1), abs=1e-6)


def test_sinusoid_positions_are_computed_on_the_fly_and_odd_dims_pad() -> None:
    module = SinusoidalPositions(6)
    assert not list(module.parameters())
    torch.testing.assert_close(
        module(torch.tensor([3, 5000])), sinusoid_table(torch.arange(5001), 6)[[3, 5000]]
    )
    odd = sinusoid_table(torch.arange(4), 5)
    assert odd.shape == (4, 5)
    torch.testing.assert_close(odd[:, :4], sinusoid_table(torch.arange(4), 4))
    assert torch.equal(odd[:, 4], torch.zeros(4))


def fairseq_table(length: int, dim: int, offset: int = 0) -> torch.Tensor:
    """fairseq's SinusoidalPositionalEmbedding.get_embedding (as M2M100 and NLLB compute it), written out."""
    half = dim // 2
    emb = math.log(10000) / (half - 1)
    emb = torch.exp(torch.arange(half, dtype=torch.float) * -emb)
    emb = torch.arange(length + offset, dtype=torch.float)[:, None] * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(length + offset, 1)], dim=1)
    return emb[offset:]


@pytest.mark.parametrize("dim", [4, 8, 9, 64])
def test_the_fairseq_sinusoid_layout_equals_fairseqs_formula(dim: int) -> None:
    positions = torch.arange(300)
    torch.testing.assert_close(
        sinusoid_table(positions, dim, "fairseq"), fairseq_table(300, dim), rtol=0, atol=1e-6
    )
    # its last frequency is 1/10000 (the standard layout's stops one step short of it)
    half = dim // 2
    assert sinusoid_table(torch.tensor([10000]), dim, "fairseq")[0, half - 1].item() == pytest.approx(
        math.sin(1.0), abs=1e-4
    )


def test_the_standard_layout_is_the_default_and_a_bad_layout_or_a_tiny_fairseq_dim_is_refused() -> None:
    positions = torch.arange(20)
    assert torch.equal(sinusoid_table(positions, 8, "standard"), sinusoid_table(positions, 8))
    assert not torch.allclose(sinusoid_table(positions, 8, "fairseq"), sinusoid_table(positions, 8))
    with pytest.raises(ValueError, match="tensor2tensor"):
        sinusoid_table(positions, 8, "tensor2tensor")
    with pytest.raises(ValueError, match="dimension of 4 or more"):
        sinusoid_table(positions, 3, "fairseq")


@pytest.mark.parametrize("layout", ["standard", "fairseq"])
def test_sinusoid_positions_with_an_offset_read_the_table_from_the_offset(layout: str) -> None:
    module = SinusoidalPositions(8, layout=layout, offset=2)
    table = sinusoid_table(torch.arange(12), 8, layout)  # (12, 8)
    assert torch.equal(module(torch.arange(10)), table[2:])
    rows = torch.tensor([[0, 1, 5], [3, 3, 0]])  # (B, T) per-row columns
    assert torch.equal(module(rows), table[rows + 2])
    assert torch.equal(
        SinusoidalPositions(8, layout="fairseq", offset=2)(torch.arange(5)), fairseq_table(5, 8, 2)
    )


def test_learned_positions_with_an_offset_have_that_many_more_rows_and_the_same_limit() -> None:
    torch.manual_seed(0)
    module = LearnedPositions(4, max_positions=6, offset=2)
    assert module.table.weight.shape == (8, 4)
    assert torch.equal(module(torch.tensor([5, 0])), module.table.weight[[7, 2]])
    with pytest.raises(ValueError, match="max_positions=6"):
        module(torch.arange(7))


def test_learned_positions_lookup_and_limit() -> None:
    torch.manual_seed(0)
    module = LearnedPositions(4, max_positions=6)
    assert torch.equal(module(torch.tensor([5, 0])), module.table.weight[[5, 0]])
    with pytest.raises(ValueError, match="max_positions=6"):
        module(torch.arange(7))


def rotated(x: torch.Tensor, positions: torch.Tensor, rotary: RotaryEmbedding) -> torch.Tensor:
    cos, sin = rotary(positions)
    return apply_rotary(x, cos, sin)


def test_rope_scores_are_invariant_to_shifting_all_positions() -> None:
    gen = torch.Generator().manual_seed(0)
    rotary = RotaryEmbedding(16)
    q, k = torch.randn(2, 3, 6, 16, generator=gen), torch.randn(2, 3, 6, 16, generator=gen)
    positions = torch.tensor([0, 1, 2, 5, 9, 30])
    scores = rotated(q, positions, rotary) @ rotated(k, positions, rotary).transpose(-1, -2)
    shifted = rotated(q, positions + 17, rotary) @ rotated(k, positions + 17, rotary).transpose(-1, -2)
    torch.testing.assert_close(shifted, scores, rtol=1e-5, atol=1e-5)
    # Scores do depend on relative position: the rotation is not a no-op.
    unrotated = q @ k.transpose(-1, -2)
    assert (scores - unrotated).abs().max() > 0.1


def test_rope_preserves_norms_and_is_a_rotation_of_half_pairs() -> None:
    gen = torch.Generator().manual_seed(1)
    head_dim, base = 8, 10000.0
    rotary = RotaryEmbedding(head_dim, base=base)
    x = torch.randn(1, 2, 5, head_dim, generator=gen)
    positions = torch.arange(5) * 3
    out = rotated(x, positions, rotary)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), rtol=1e-6, atol=1e-6)
    half = head_dim // 2
    for t, pos in enumerate(positions.tolist()):
        for i in range(half):
            theta = pos * base ** (-2 * i / head_dim)
            a, b = x[0, :, t, i], x[0, :, t, i + half]
            torch.testing.assert_close(out[0, :, t, i], a * math.cos(theta) - b * math.sin(theta))
            torch.testing.assert_close(out[0, :, t, i + half], a * math.sin(theta) + b * math.cos(theta))


def test_rope_rejects_odd_head_dim() -> None:
    with pytest.raises(ValueError, match="even head dimension"):
        RotaryEmbedding(7)


def test_alibi_slopes_power_of_two() -> None:
    expected = torch.tensor([2.0 ** -(i + 1) for i in range(8)])
    torch.testing.assert_close(alibi_slopes(8), expected, rtol=1e-6, atol=0.0)
    torch.testing.assert_close(
        alibi_slopes(4), torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]), rtol=1e-6, atol=0.0
    )


def test_alibi_slopes_twelve_heads_follow_the_paper_rule() -> None:
    # The 8 slopes of n=8, then every other slope of n=16: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    expected = [2.0 ** -(i + 1) for i in range(8)] + [2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5]
    torch.testing.assert_close(alibi_slopes(12), torch.tensor(expected), rtol=1e-6, atol=0.0)


def test_alibi_bias_is_minus_slope_times_distance() -> None:
    slopes = alibi_slopes(4)
    bias = alibi_bias(slopes, torch.arange(3) + 2, torch.arange(5))  # bottom-right aligned, Tq=3, Tk=5
    assert bias.shape == (4, 3, 5)
    for h in range(4):
        for i in range(3):
            for j in range(5):
                assert bias[h, i, j].item() == pytest.approx(-slopes[h].item() * abs(i + 2 - j), abs=1e-7)
    assert torch.equal(bias[:, :, :].diagonal(offset=2, dim1=1, dim2=2), torch.zeros(4, 3))
    # Fractional key positions (pooled memory centres) are allowed.
    pooled = alibi_bias(slopes, torch.tensor([0, 1]), torch.tensor([0.5, 2.5]))
    torch.testing.assert_close(pooled[1], -slopes[1] * torch.tensor([[0.5, 2.5], [0.5, 1.5]]))

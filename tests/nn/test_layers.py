"""Feed-forward, residual blocks, memory downsampling and embeddings against hand-written formulas."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.nn.embeddings import OutputProjection, TokenEmbedding
from seq2seq.nn.layers import FeedForward, MemoryDownsampler, Residual

TOL = {"rtol": 1e-5, "atol": 1e-5}


def test_feedforward_relu_gelu_and_silu_formulas() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    for activation, nonlinearity in (
        ("relu", lambda h: h.clamp(min=0)),
        ("gelu", lambda h: 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))),
        ("silu", lambda h: h * torch.sigmoid(h)),  # Marian's "swish": no gate, one up-projection
    ):
        ffn = FeedForward(8, 16, activation=activation).eval()
        assert ffn.up.weight.shape == (16, 8)
        expected = nonlinearity(x @ ffn.up.weight.T + ffn.up.bias) @ ffn.down.weight.T + ffn.down.bias
        torch.testing.assert_close(ffn(x), expected, **TOL)


def test_feedforward_swiglu_formula() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    ffn = FeedForward(8, 16, activation="swiglu").eval()
    assert ffn.up.weight.shape == (32, 8)  # fused gate and value
    w_gate, w_value = ffn.up.weight[:16], ffn.up.weight[16:]
    b_gate, b_value = ffn.up.bias[:16], ffn.up.bias[16:]
    gate = x @ w_gate.T + b_gate
    hidden = gate * torch.sigmoid(gate) * (x @ w_value.T + b_value)
    torch.testing.assert_close(ffn(x), hidden @ ffn.down.weight.T + ffn.down.bias, **TOL)


def test_residual_pre_and_post_norm_semantics() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    sublayer = torch.nn.Linear(8, 8)

    def layer_norm(h: torch.Tensor, norm: torch.nn.LayerNorm) -> torch.Tensor:
        mean, var = h.mean(-1, keepdim=True), h.var(-1, unbiased=False, keepdim=True)
        return (h - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias

    pre = Residual(8, norm="pre", dropout=0.0)
    post = Residual(8, norm="post", dropout=0.0)
    for block in (pre, post):
        torch.nn.init.normal_(block.norm.weight)
        torch.nn.init.normal_(block.norm.bias)
    torch.testing.assert_close(pre(x, sublayer), x + sublayer(layer_norm(x, pre.norm)), **TOL)
    torch.testing.assert_close(post(x, sublayer), layer_norm(x + sublayer(x), post.norm), **TOL)
    torch.testing.assert_close(pre.sublayer_input(x), layer_norm(x, pre.norm), **TOL)
    assert torch.equal(post.sublayer_input(x), x)


def test_residual_dropout_applies_only_to_the_sublayer_branch() -> None:
    block = Residual(4, norm="pre", dropout=0.5).train()
    x = torch.randn(1, 200, 4)
    out = block(x, lambda h: torch.ones_like(h))
    branch = out - x  # each entry is 0 (dropped) or 1 / (1 - p) = 2 (kept)
    assert set(branch.round(decimals=4).unique().tolist()) <= {0.0, 2.0}
    assert 0 < (branch == 0).float().mean() < 1


def memory_and_keep() -> tuple[torch.Tensor, torch.Tensor]:
    memory = torch.arange(2 * 7 * 3, dtype=torch.float32).view(2, 7, 3)  # (B=2, S=7, D=3)
    keep = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0]], dtype=torch.bool)
    return memory, keep


def test_avg_downsampling_means_over_kept_positions_and_keep_is_any() -> None:
    memory, keep = memory_and_keep()
    pooled, pooled_keep, positions = MemoryDownsampler(3, 2, mode="avg")(memory, keep)
    assert pooled.shape == (2, 4, 3)  # ceil(7 / 2): S not divisible by the stride
    # Row 0: groups {0,1}, {2,3}, {4,5}, {6}; row 1: {0,1}, {2} (3 is padding), then only padding.
    expected = torch.zeros(2, 4, 3)
    for b, groups in enumerate([[[0, 1], [2, 3], [4, 5], [6]], [[0, 1], [2], [], []]]):
        for g, members in enumerate(groups):
            if members:
                expected[b, g] = sum(memory[b, m] for m in members) / len(members)
    torch.testing.assert_close(pooled, expected)
    assert torch.equal(pooled_keep, torch.tensor([[True] * 4, [True, True, False, False]]))
    torch.testing.assert_close(positions, torch.tensor([0.5, 2.5, 4.5, 6.5]))


def test_downsampling_stride_three_and_stride_one() -> None:
    memory, keep = memory_and_keep()
    pooled, pooled_keep, positions = MemoryDownsampler(3, 3)(memory, keep)
    assert torch.equal(pooled[1, 1:], torch.zeros(2, 3))  # groups of padding only pool to zero
    torch.testing.assert_close(pooled[0, 2], memory[0, 6])  # the lone last group
    torch.testing.assert_close(pooled[1, 0], memory[1, :3].mean(0))
    assert torch.equal(pooled_keep, torch.tensor([[True, True, True], [True, False, False]]))
    torch.testing.assert_close(positions, torch.tensor([1.0, 4.0, 7.0]))
    same, same_keep, same_positions = MemoryDownsampler(3, 1)(memory, keep)
    assert same is memory and same_keep is keep
    torch.testing.assert_close(same_positions, torch.arange(7, dtype=torch.float32))


def test_conv_downsampling_shape_and_pad_zeroing() -> None:
    torch.manual_seed(0)
    memory, keep = memory_and_keep()
    module = MemoryDownsampler(3, 2, mode="conv")
    pooled, pooled_keep, _ = module(memory, keep)
    assert pooled.shape == (2, 4, 3)
    assert torch.equal(pooled_keep, torch.tensor([[True] * 4, [True, True, False, False]]))
    # Group 1 of row 1 is (position 2, padding at 3): the pad's contents must not matter.
    changed = memory.clone()
    changed[1, 3:] = 1e3
    torch.testing.assert_close(module(changed, keep)[0], pooled)
    group = memory[0, 2:4]  # (stride, D)
    expected = torch.einsum("oik,ki->o", module.conv.weight, group) + module.conv.bias
    torch.testing.assert_close(pooled[0, 1], expected, **TOL)


def test_token_embedding_is_scaled_and_pad_is_zero() -> None:
    torch.manual_seed(0)
    embedding = TokenEmbedding(10, 16, pad_id=1)
    tokens = torch.tensor([[2, 1, 9]])
    out = embedding(tokens)
    torch.testing.assert_close(out[0, 0], embedding.weight[2] * 4.0)
    assert torch.equal(out[0, 1], torch.zeros(16))
    out.sum().backward()
    assert torch.equal(embedding.weight.grad[1], torch.zeros(16))  # the pad row is never trained


def test_an_unscaled_token_embedding_is_the_raw_table_lookup() -> None:
    torch.manual_seed(0)
    embedding = TokenEmbedding(10, 16, pad_id=1, scale=False)
    tokens = torch.tensor([[2, 1, 9], [0, 3, 3]])
    assert torch.equal(embedding(tokens), embedding.weight[tokens])
    assert torch.equal(embedding(tokens)[0, 1], torch.zeros(16))  # the pad row stays zero


def test_output_projection_bias_is_added_to_the_logits_and_stays_apart_from_a_tied_weight() -> None:
    torch.manual_seed(0)
    embedding = TokenEmbedding(10, 16, pad_id=0)
    projection = OutputProjection(16, 10, shared_weight=embedding.weight, bias=True)
    assert projection.weight is embedding.weight
    assert torch.equal(projection.bias, torch.zeros(10))  # zeros at init
    assert set(dict(projection.named_parameters())) == {"weight", "bias"}
    with torch.no_grad():
        projection.bias.copy_(torch.randn(10))
    hidden = torch.randn(2, 3, 16)
    torch.testing.assert_close(projection(hidden), hidden @ embedding.weight.T + projection.bias, **TOL)
    projection(hidden).sum().backward()
    torch.testing.assert_close(projection.bias.grad, torch.full((10,), 6.0))  # d sum / d b_v = B * T
    plain = OutputProjection(16, 10)
    assert plain.bias is None and set(plain.state_dict()) == {"weight"}


def test_output_projection_shares_or_owns_its_weight() -> None:
    torch.manual_seed(0)
    embedding = TokenEmbedding(10, 16, pad_id=0)
    tied = OutputProjection(16, 10, shared_weight=embedding.weight)
    assert tied.weight is embedding.weight
    hidden = torch.randn(2, 3, 16)
    torch.testing.assert_close(tied(hidden), hidden @ embedding.weight.T)
    untied = OutputProjection(16, 10)
    assert untied.weight is not embedding.weight and untied.weight.shape == (10, 16)


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu", "silu"])
def test_feedforward_parameter_count(activation: str) -> None:
    ffn = FeedForward(8, 16, activation=activation)
    up = (2 if activation == "swiglu" else 1) * 16
    assert sum(p.numel() for p in ffn.parameters()) == 8 * up + up + 16 * 8 + 8

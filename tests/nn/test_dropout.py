"""Dropout: the CPU keep-mask path has dropout's distribution, scaling, gradient and seeding."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seq2seq.nn.dropout import Dropout, keep_mask


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_keep_mask_drops_with_probability_p(p: float) -> None:
    torch.manual_seed(0)
    n = 1_000_001  # odd: the last int64 word is only half used
    dropped = (~keep_mask(torch.Size([n]), p)).double().mean().item()
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_keep_mask_elements_are_independent() -> None:
    """Both 32-bit halves of each random word are used: neighbours must not be correlated."""
    torch.manual_seed(0)
    keep = keep_mask(torch.Size([500_000, 2]), 0.5).double()  # (N, 2): the two halves of N words
    correlation = torch.corrcoef(keep.t())[0, 1].item()
    assert abs(correlation) < 5 / math.sqrt(500_000)


def test_kept_elements_are_scaled_and_dropped_ones_zero() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 33)
    y = Dropout(0.25).train()(x)
    dropped = y == 0
    assert 0 < dropped.sum() < x.numel()
    torch.testing.assert_close(y[~dropped], x[~dropped] * (1 / 0.75), rtol=0, atol=0)


def test_gradient_is_the_same_mask_scaled() -> None:
    torch.manual_seed(0)
    x = torch.randn(40, 50, requires_grad=True)
    y = Dropout(0.2).train()(x)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    expected = torch.where(y != 0, upstream * (1 / 0.8), torch.zeros(()))
    torch.testing.assert_close(x.grad, expected, rtol=0, atol=0)


def test_seeded_draws_repeat_and_differ_between_seeds() -> None:
    dropout, x = Dropout(0.5).train(), torch.ones(1000)
    torch.manual_seed(1)
    first = dropout(x)
    torch.manual_seed(1)
    again = dropout(x)
    torch.manual_seed(2)
    other = dropout(x)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_eval_mode_and_zero_p_are_identity_and_p_one_drops_all() -> None:
    x = torch.randn(8, 9)
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0).train()(x) is x
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


def test_bfloat16_keeps_its_dtype_and_matches_float32_mask() -> None:
    x = torch.randn(30, 30)
    dropout = Dropout(0.3).train()
    torch.manual_seed(3)
    y32 = dropout(x)
    torch.manual_seed(3)
    y16 = dropout(x.bfloat16())
    assert y16.dtype == torch.bfloat16
    assert torch.equal(y16 == 0, y32 == 0)


def test_gradient_checkpointing_replays_the_same_mask() -> None:
    layer = torch.nn.Sequential(torch.nn.Linear(16, 16), Dropout(0.5)).train()
    x = torch.randn(8, 16, requires_grad=True)
    torch.manual_seed(4)
    layer(x).square().sum().backward()
    plain = x.grad.clone()
    x.grad = None
    torch.manual_seed(4)
    torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False).square().sum().backward()
    torch.testing.assert_close(x.grad, plain, rtol=0, atol=0)


def test_same_expectation_as_torch_dropout() -> None:
    """Averaged over many draws both are unbiased: E[dropout(x)] = x."""
    torch.manual_seed(5)
    x = torch.full((200_000,), 2.0)
    ours = Dropout(0.1).train()(x).mean().item()
    theirs = F.dropout(x, 0.1, training=True).mean().item()
    bound = 5 * 2.0 * math.sqrt(0.1 / 0.9 / x.numel())
    assert abs(ours - 2.0) < bound and abs(theirs - 2.0) < bound


def test_invalid_probability_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"p=1\.5"):
        Dropout(1.5)

"""Label-smoothed NLL against cross-entropy and an explicit smoothed-distribution reference."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seq2seq.errors import UserError
from seq2seq.train.loss import label_smoothed_nll, perplexity

PAD = 1


def _batch(seed: int = 0, batch: int = 3, length: int = 5, vocab: int = 11, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=gen, dtype=dtype) * 3
    target = torch.randint(0, vocab, (batch, length), generator=gen)
    target[0, 3:] = PAD  # trailing padding
    target[-1, -1] = PAD
    return logits, target


def _smoothed_reference(logits: torch.Tensor, target: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Cross-entropy against the explicit distribution (1 - eps) * onehot + eps / V."""
    vocab = logits.shape[-1]
    logp = torch.log_softmax(logits.double(), dim=-1)
    onehot = F.one_hot(target, vocab).double()
    smoothed = (1 - epsilon) * onehot + epsilon / vocab
    per_token = -(smoothed * logp).sum(-1)
    return per_token[target != PAD].sum()


def test_epsilon_zero_equals_cross_entropy():
    logits, target = _batch()
    out = label_smoothed_nll(logits, target, epsilon=0.0, pad_id=PAD)
    expected = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=PAD, reduction="sum")
    torch.testing.assert_close(out.loss_sum, expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out.nll_sum, expected, rtol=1e-6, atol=1e-6)
    assert out.n_tokens.item() == int((target != PAD).sum())
    assert out.n_tokens.dtype == torch.int64


@pytest.mark.parametrize("epsilon", [0.1, 0.3])
def test_smoothing_matches_explicit_distribution(epsilon):
    logits, target = _batch(seed=1)
    out = label_smoothed_nll(logits, target, epsilon=epsilon, pad_id=PAD)
    expected = _smoothed_reference(logits, target, epsilon).float()
    torch.testing.assert_close(out.loss_sum, expected, rtol=1e-6, atol=1e-5)
    plain = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=PAD, reduction="sum")
    torch.testing.assert_close(out.nll_sum, plain, rtol=1e-6, atol=1e-5)


def test_matches_torch_label_smoothing_on_flat_input():
    logits, target = _batch(seed=2)
    flat_logits, flat_target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
    out = label_smoothed_nll(flat_logits, flat_target, epsilon=0.1, pad_id=PAD)
    expected = F.cross_entropy(
        flat_logits, flat_target, ignore_index=PAD, reduction="sum", label_smoothing=0.1
    )
    torch.testing.assert_close(out.loss_sum, expected, rtol=1e-6, atol=1e-5)


def test_pad_positions_contribute_nothing():
    logits, target = _batch(seed=3)
    before = label_smoothed_nll(logits, target, epsilon=0.1, pad_id=PAD)
    changed = logits.clone()
    changed[target == PAD] = torch.randn_like(changed[target == PAD]) * 100
    after = label_smoothed_nll(changed, target, epsilon=0.1, pad_id=PAD)
    assert torch.equal(before.loss_sum, after.loss_sum)
    assert torch.equal(before.nll_sum, after.nll_sum)

    logits.requires_grad_(True)
    label_smoothed_nll(logits, target, epsilon=0.1, pad_id=PAD).loss_sum.backward()
    assert torch.all(logits.grad[target == PAD] == 0)
    assert torch.any(logits.grad[target != PAD] != 0)


def test_pad_id_outside_vocabulary_and_all_pad():
    logits, target = _batch(seed=4)
    target[0, 3:] = -100
    out = label_smoothed_nll(logits, target, epsilon=0.1, pad_id=-100)
    expected = F.cross_entropy(
        logits.transpose(1, 2), target, ignore_index=-100, reduction="sum", label_smoothing=0.1
    )
    torch.testing.assert_close(out.loss_sum, expected, rtol=1e-6, atol=1e-5)

    empty = label_smoothed_nll(logits, torch.full_like(target, PAD), epsilon=0.1, pad_id=PAD)
    assert empty.loss_sum.item() == 0.0 and empty.n_tokens.item() == 0


def test_bf16_logits_are_reduced_in_float32():
    logits, target = _batch(seed=5, vocab=257)
    low = logits.bfloat16()
    out = label_smoothed_nll(low, target, epsilon=0.1, pad_id=PAD)
    assert out.loss_sum.dtype == torch.float32
    expected = _smoothed_reference(low.float(), target, 0.1).float()
    torch.testing.assert_close(out.loss_sum, expected, rtol=1e-6, atol=1e-4)


def test_gradient_double_precision():
    logits, target = _batch(seed=6, batch=2, length=3, vocab=5, dtype=torch.float64)
    logits.requires_grad_(True)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return label_smoothed_nll(x, target, epsilon=0.2, pad_id=PAD).loss_sum

    assert loss(logits).dtype == torch.float64
    assert torch.autograd.gradcheck(loss, (logits,))
    (grad,) = torch.autograd.grad(loss(logits), logits)
    ref_logits = logits.detach().clone().requires_grad_(True)
    (ref_grad,) = torch.autograd.grad(_smoothed_reference(ref_logits, target, 0.2), ref_logits)
    torch.testing.assert_close(grad, ref_grad)


def test_invalid_arguments():
    logits, target = _batch()
    with pytest.raises(UserError, match="epsilon"):
        label_smoothed_nll(logits, target, epsilon=1.0, pad_id=PAD)
    with pytest.raises(UserError, match="epsilon"):
        label_smoothed_nll(logits, target, epsilon=-0.1, pad_id=PAD)
    with pytest.raises(ValueError, match="do not match"):
        label_smoothed_nll(logits, target[:, :-1], epsilon=0.1, pad_id=PAD)


def test_perplexity():
    assert perplexity(0.0, 10) == 1.0
    assert perplexity(torch.tensor(10 * math.log(7.0)), torch.tensor(10)) == pytest.approx(7.0)
    assert perplexity(1e6, 1) == math.inf
    assert math.isnan(perplexity(3.0, 0))

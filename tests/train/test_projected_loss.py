"""projected_label_smoothed_nll equals label_smoothed_nll of the projected logits, values and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from seq2seq.errors import UserError
from seq2seq.train.loss import label_smoothed_nll, projected_label_smoothed_nll

PAD = 0


def _inputs(seed: int, n: int = 11, d: int = 6, vocab: int = 13, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, d, generator=gen, dtype=dtype)
    weight = torch.randn(vocab, d, generator=gen, dtype=dtype)
    target = torch.randint(1, vocab, (n,), generator=gen)
    target[[2, n - 4]] = PAD
    return hidden, weight, target


def _loss_and_grads(fused: bool, hidden, weight, target, epsilon: float, **options):
    hidden, weight = hidden.clone().requires_grad_(True), weight.clone().requires_grad_(True)
    if fused:
        out = projected_label_smoothed_nll(hidden, weight, target, epsilon=epsilon, pad_id=PAD, **options)
    else:
        out = label_smoothed_nll(F.linear(hidden, weight), target, epsilon=epsilon, pad_id=PAD)
    (out.loss_sum * 0.37).backward()
    return out, hidden.grad, weight.grad


@pytest.mark.parametrize("rows_per_block", [1, 3, 4, 100])  # blocks of 1 row, a ragged last block, one block
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_equals_the_loss_of_the_full_logits_with_the_same_gradients(
    rows_per_block: int, epsilon: float
) -> None:
    hidden, weight, target = _inputs(seed=rows_per_block)
    options = {"chunk_elements": rows_per_block * weight.shape[0]}
    fused, fused_dh, fused_dw = _loss_and_grads(True, hidden, weight, target, epsilon, **options)
    ref, ref_dh, ref_dw = _loss_and_grads(False, hidden, weight, target, epsilon)
    torch.testing.assert_close(fused.loss_sum, ref.loss_sum, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(fused.nll_sum, ref.nll_sum, rtol=1e-6, atol=1e-5)
    assert int(fused.n_tokens) == int(ref.n_tokens) == 9
    torch.testing.assert_close(fused_dh, ref_dh, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(fused_dw, ref_dw, rtol=1e-5, atol=1e-6)
    assert torch.all(fused_dh[target == PAD] == 0)


def test_batched_states_and_double_precision_gradcheck() -> None:
    hidden, weight, target = _inputs(seed=5, n=6, d=3, vocab=5, dtype=torch.float64)
    hidden, weight = hidden.requires_grad_(True), weight.requires_grad_(True)

    def loss(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        out = projected_label_smoothed_nll(
            h, w, target.view(2, 3), epsilon=0.2, pad_id=PAD, chunk_elements=10
        )
        return out.loss_sum

    assert loss(hidden.view(2, 3, 3), weight).dtype == torch.float64
    assert torch.autograd.gradcheck(lambda h, w: loss(h.view(2, 3, 3), w), (hidden, weight))


def test_without_autograd_the_values_are_the_same() -> None:
    hidden, weight, target = _inputs(seed=6)
    with_grad = projected_label_smoothed_nll(
        hidden.requires_grad_(True), weight, target, epsilon=0.1, pad_id=PAD, chunk_elements=40
    )
    with torch.inference_mode():
        without = projected_label_smoothed_nll(
            hidden, weight, target, epsilon=0.1, pad_id=PAD, chunk_elements=40
        )
    assert not without.loss_sum.requires_grad
    torch.testing.assert_close(without.loss_sum, with_grad.loss_sum.detach(), rtol=0, atol=0)


def test_bf16_autocast_matches_autograd_under_the_same_autocast() -> None:
    hidden, weight, target = _inputs(seed=7, n=40, d=32, vocab=300)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fused, fused_dh, fused_dw = _loss_and_grads(True, hidden, weight, target, 0.1, chunk_elements=3000)
        ref, ref_dh, ref_dw = _loss_and_grads(False, hidden, weight, target, 0.1)
    assert fused.loss_sum.dtype == torch.float32
    assert fused_dh.dtype == fused_dw.dtype == torch.float32
    torch.testing.assert_close(fused.loss_sum, ref.loss_sum, rtol=1e-5, atol=1e-3)
    # bf16 gradient matmuls round to 8 bits of mantissa; blocks round their partial sums separately.
    torch.testing.assert_close(fused_dh, ref_dh, rtol=2e-2, atol=2e-2 * ref_dh.abs().max().item())
    torch.testing.assert_close(fused_dw, ref_dw, rtol=2e-2, atol=2e-2 * ref_dw.abs().max().item())


def test_a_frozen_weight_gets_no_gradient_and_the_states_the_same_one(monkeypatch) -> None:
    """A frozen output weight (trainer.lora, trainer.freeze): the states' gradient is the one computed
    with the weight trained, the weight gets none, and no (V, D) gradient buffer is made for it."""
    hidden, weight, target = _inputs(seed=9)
    _, trained_dh, _ = _loss_and_grads(True, hidden, weight, target, 0.1, chunk_elements=40)
    states = hidden.clone().requires_grad_(True)
    made, zeros_like = [], torch.zeros_like

    def counted(tensor: torch.Tensor, **options) -> torch.Tensor:
        made.append(tuple(tensor.shape))
        return zeros_like(tensor, **options)

    monkeypatch.setattr(torch, "zeros_like", counted)
    out = projected_label_smoothed_nll(states, weight, target, epsilon=0.1, pad_id=PAD, chunk_elements=40)
    (out.loss_sum * 0.37).backward()
    assert weight.grad is None and tuple(weight.shape) not in made
    torch.testing.assert_close(states.grad, trained_dh, rtol=0, atol=0)


def test_invalid_arguments() -> None:
    hidden, weight, target = _inputs(seed=8)
    with pytest.raises(UserError, match="epsilon"):
        projected_label_smoothed_nll(hidden, weight, target, epsilon=1.0, pad_id=PAD)
    with pytest.raises(ValueError, match="do not fit"):
        projected_label_smoothed_nll(hidden, weight[:, :-1], target, epsilon=0.1, pad_id=PAD)
    with pytest.raises(ValueError, match="do not fit"):
        projected_label_smoothed_nll(hidden, weight, target[:-1], epsilon=0.1, pad_id=PAD)

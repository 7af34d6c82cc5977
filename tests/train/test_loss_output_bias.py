"""A logit bias (model.output_bias) in the loss that never builds the logits: the same values and gradients,
the bias's included, as the label-smoothed loss of the plain logits path, and the trainer's objective
passing the model's `output.bias` to it."""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F
from tiny_models import tiny_decoder_only, tiny_model

from seq2seq.data.collate import Batch
from seq2seq.train.loss import label_smoothed_nll, projected_label_smoothed_nll
from seq2seq.train.objective import TrainingLoss, batch_loss

PAD, VOCAB = 0, 19


def inputs(seed: int, n: int = 11, d: int = 6, vocab: int = 13, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, d, generator=gen, dtype=dtype)
    weight = torch.randn(vocab, d, generator=gen, dtype=dtype)
    bias = torch.randn(vocab, generator=gen, dtype=dtype)
    target = torch.randint(1, vocab, (n,), generator=gen)
    target[[2, n - 4]] = PAD
    return hidden, weight, bias, target


def loss_and_grads(fused: bool, hidden, weight, bias, target, epsilon: float, **options):
    hidden, weight, bias = (t.clone().requires_grad_(True) for t in (hidden, weight, bias))
    if fused:
        out = projected_label_smoothed_nll(
            hidden, weight, target, epsilon=epsilon, pad_id=PAD, output_bias=bias, **options
        )
    else:
        out = label_smoothed_nll(F.linear(hidden, weight, bias), target, epsilon=epsilon, pad_id=PAD)
    (out.loss_sum * 0.37).backward()
    return out, hidden.grad, weight.grad, bias.grad


@pytest.mark.parametrize("rows_per_block", [1, 3, 100])  # one row per block, a ragged last block, one block
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_the_projected_loss_with_a_bias_equals_the_logits_path(rows_per_block: int, epsilon: float) -> None:
    hidden, weight, bias, target = inputs(seed=rows_per_block)
    options = {"chunk_elements": rows_per_block * weight.shape[0]}
    fused, *fused_grads = loss_and_grads(True, hidden, weight, bias, target, epsilon, **options)
    ref, *ref_grads = loss_and_grads(False, hidden, weight, bias, target, epsilon)
    torch.testing.assert_close(fused.loss_sum, ref.loss_sum, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(fused.nll_sum, ref.nll_sum, rtol=1e-6, atol=1e-5)
    for got, want in zip(fused_grads, ref_grads):  # hidden, weight, bias
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert fused_grads[2].abs().sum() > 0
    without = projected_label_smoothed_nll(hidden, weight, target, epsilon=epsilon, pad_id=PAD)
    assert not torch.allclose(without.loss_sum, fused.loss_sum)  # the bias counts


def test_a_bias_alone_trained_gets_its_gradient_and_double_precision_gradcheck() -> None:
    hidden, weight, bias, target = inputs(seed=5, n=6, d=3, vocab=5, dtype=torch.float64)
    bias.requires_grad_(True)  # hidden and weight frozen (what trainer.freeze may leave)
    out = projected_label_smoothed_nll(hidden, weight, target, epsilon=0.2, pad_id=PAD, output_bias=bias)
    (grad,) = torch.autograd.grad(out.loss_sum, [bias])
    reference = label_smoothed_nll(F.linear(hidden, weight, bias), target, epsilon=0.2, pad_id=PAD)
    torch.testing.assert_close(grad, torch.autograd.grad(reference.loss_sum, [bias])[0])

    def loss(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return projected_label_smoothed_nll(
            h, w, target, epsilon=0.2, pad_id=PAD, chunk_elements=10, output_bias=b
        ).loss_sum

    arguments = (hidden.requires_grad_(True), weight.requires_grad_(True), bias)
    assert torch.autograd.gradcheck(loss, arguments)


def test_a_bias_of_the_wrong_size_is_refused() -> None:
    hidden, weight, bias, target = inputs(seed=8)
    with pytest.raises(ValueError, match="does not fit"):
        projected_label_smoothed_nll(hidden, weight, target, epsilon=0.1, pad_id=PAD, output_bias=bias[:-1])


def random_bias(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():
        model.output.bias.copy_(torch.randn(VOCAB, generator=torch.Generator().manual_seed(4)))
    return model


def a_batch() -> Batch:
    src = torch.tensor([[5, 6, 7, 3], [8, 3, PAD, PAD], [4, 4, 3, PAD]])
    tgt_out = torch.tensor([[9, 10, 3, PAD], [11, 3, PAD, PAD], [12, 13, 14, 3]])
    tgt_in = torch.cat([torch.full((3, 1), 2), tgt_out[:, :-1]], dim=1).masked_fill(tgt_out == PAD, PAD)
    return Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out, n_tgt_tokens=int((tgt_out != PAD).sum()))


@pytest.mark.parametrize("wrap", [False, True], ids=["function", "TrainingLoss"])
@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only"])
def test_batch_loss_passes_the_models_bias_and_equals_the_logits_path(family: str, wrap: bool) -> None:
    build = tiny_model if family == "encoder_decoder" else tiny_decoder_only
    model = random_bias(build(VOCAB, pad_id=PAD, seed=1, output_bias=True, max_positions=64))
    batch = a_batch()
    reference = label_smoothed_nll(model(batch.src, batch.tgt_in), batch.tgt_out, epsilon=0.1, pad_id=PAD)
    reference.loss_sum.backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    loss_fn = partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD, chunk_elements=2 * VOCAB)
    out = batch_loss(model, batch, TrainingLoss(loss_fn) if wrap else loss_fn, pad_id=PAD)
    out.loss_sum.backward()
    torch.testing.assert_close(out.loss_sum, reference.loss_sum, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(out.nll_sum, reference.nll_sum, rtol=1e-6, atol=1e-5)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, expected[name], rtol=1e-5, atol=1e-6, msg=name)
    assert model.output.bias.grad.abs().sum() > 0


def test_a_loss_without_the_bias_keyword_still_serves_a_model_without_a_bias() -> None:
    """Custom token losses taking (hidden, output_weight, target) only keep working for such models."""
    seen = []

    def three_arguments(hidden, output_weight, target):
        seen.append(target.numel())
        return projected_label_smoothed_nll(hidden, output_weight, target, epsilon=0.0, pad_id=PAD)

    model = tiny_model(VOCAB, pad_id=PAD, seed=1)
    batch_loss(model, a_batch(), TrainingLoss(three_arguments), pad_id=PAD)
    assert seen == [9]

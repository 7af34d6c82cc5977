"""Guided alignment's loss: against a hand-computed value, and inside batch_loss with a real model."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch
from tiny_models import tiny_model

from seq2seq.data.collate import Batch
from seq2seq.train.alignment_loss import alignment_targets, guided_alignment_loss
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.objective import TrainingLoss, batch_loss

PAD, VOCAB = 0, 19


def test_the_loss_equals_a_hand_computed_value() -> None:
    # Row 0, target 0 is linked to sources 0 and 1 (half each); target 1 to source 2; target 2 to none.
    weights = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]])  # (1, 3, 3)
    links = torch.tensor([[0, 0, 0], [0, 0, 1], [0, 1, 2]])
    expected = -(0.5 * math.log(0.5) + 0.5 * math.log(0.25)) - math.log(0.7)  # 1.3964...
    assert guided_alignment_loss(weights, links).item() == pytest.approx(expected, rel=1e-6)


def test_targets_spread_each_row_evenly_and_leave_unlinked_rows_empty() -> None:
    links = torch.tensor([[1, 0, 2], [1, 0, 0], [1, 0, 1], [0, 1, 1]])
    targets = alignment_targets(links, (2, 2, 3))
    expected = torch.zeros(2, 2, 3)
    expected[1, 0] = 1 / 3
    expected[0, 1, 1] = 1.0
    torch.testing.assert_close(targets, expected)


def test_a_link_to_a_source_given_no_weight_costs_a_finite_amount() -> None:
    weights = torch.tensor([[[1.0, 0.0]]], requires_grad=True)
    loss = guided_alignment_loss(weights, torch.tensor([[0, 0, 1]]))
    assert math.isfinite(loss.item()) and loss.item() == pytest.approx(-math.log(1e-9))


def test_no_links_cost_nothing() -> None:
    weights = torch.full((2, 3, 4), 0.25, requires_grad=True)
    loss = guided_alignment_loss(weights, torch.zeros((0, 3), dtype=torch.int64))
    loss.backward()
    assert loss.item() == 0.0 and not weights.grad.any()


def _batch(links: torch.Tensor | None) -> Batch:
    src = torch.tensor([[5, 6, 7, 3], [8, 3, PAD, PAD]])
    tgt_out = torch.tensor([[9, 10, 3], [11, 3, PAD]])
    tgt_in = torch.tensor([[2, 9, 10], [2, 11, PAD]])
    return Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out, n_tgt_tokens=5, alignment=links)


def test_batch_loss_adds_the_weighted_loss_of_the_alignment_head() -> None:
    model = tiny_model(VOCAB, pad_id=PAD, seed=3, alignment_layer=0, alignment_head=1)
    token_loss = partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD)
    links = torch.tensor([[0, 0, 0], [0, 1, 2], [0, 2, 3], [1, 0, 0], [1, 1, 1]])
    plain = batch_loss(model, _batch(links), TrainingLoss(token_loss), pad_id=PAD)
    guided = batch_loss(model, _batch(links), TrainingLoss(token_loss, alignment_weight=0.3), pad_id=PAD)
    head = model.cross_attention(_batch(None).src, _batch(None).tgt_in, layer=0)[:, 1]  # (B, T, S)
    expected = plain.loss_sum + 0.3 * guided_alignment_loss(head, links)
    torch.testing.assert_close(guided.loss_sum, expected, rtol=1e-5, atol=1e-5)
    assert guided.nll_sum == plain.nll_sum and guided.n_tokens == plain.n_tokens
    guided.loss_sum.backward()
    assert model.decoder.layers[0].cross_attn.q.weight.grad.abs().sum() > 0


def test_a_batch_without_links_trains_on_tokens_only() -> None:
    model = tiny_model(VOCAB, pad_id=PAD, seed=3, alignment_layer=0, alignment_head=1)
    token_loss = partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD)
    plain = batch_loss(model, _batch(None), TrainingLoss(token_loss), pad_id=PAD)
    guided = batch_loss(model, _batch(None), TrainingLoss(token_loss, alignment_weight=0.3), pad_id=PAD)
    assert guided.loss_sum == plain.loss_sum

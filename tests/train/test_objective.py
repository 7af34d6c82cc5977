"""batch_loss: states only at real target positions, with the same loss and gradients as the full logits."""

from __future__ import annotations

from functools import partial

import torch
from tiny_models import TINY, tiny_model

from seq2seq.data.collate import Batch
from seq2seq.train.loss import label_smoothed_nll, projected_label_smoothed_nll
from seq2seq.train.objective import batch_loss

PAD, VOCAB = 0, 19


def test_output_keep_returns_the_kept_rows_of_the_full_logits() -> None:
    model = tiny_model(VOCAB, seed=0, pad_id=PAD)
    src = torch.tensor([[5, 6, 7, 3], [8, 3, PAD, PAD]])
    tgt_in = torch.tensor([[2, 9, 10], [2, 11, PAD]])
    keep = torch.tensor([[True, True, True], [True, True, False]])
    full = model(src, tgt_in)  # (2, 3, V)
    kept = model(src, tgt_in, output_keep=keep)  # (5, V)
    assert kept.shape == (5, VOCAB)
    torch.testing.assert_close(kept, full[keep], rtol=1e-6, atol=1e-6)
    states = model(src, tgt_in, output_keep=keep, project=False)  # (5, D)
    assert states.shape == (5, TINY["d_model"])
    torch.testing.assert_close(model.output(states), kept, rtol=0, atol=0)


def test_batch_loss_equals_the_loss_of_the_full_logits_with_the_same_gradients() -> None:
    model = tiny_model(VOCAB, pad_id=PAD, seed=1)
    src = torch.tensor([[5, 6, 7, 3], [8, 3, PAD, PAD], [4, 4, 3, PAD]])
    tgt_out = torch.tensor([[9, 10, 3, PAD], [11, 3, PAD, PAD], [12, 13, 14, 3]])
    tgt_in = torch.cat([torch.full((3, 1), 2), tgt_out[:, :-1]], dim=1).masked_fill(tgt_out == PAD, PAD)
    batch = Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out, n_tgt_tokens=int((tgt_out != PAD).sum()))
    reference = label_smoothed_nll(model(src, tgt_in), tgt_out, epsilon=0.1, pad_id=PAD)
    reference.loss_sum.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()

    loss_fn = partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD, chunk_elements=2 * VOCAB)
    out = batch_loss(model, batch, loss_fn, pad_id=PAD)
    out.loss_sum.backward()
    assert int(out.n_tokens) == batch.n_tgt_tokens == 9
    torch.testing.assert_close(out.loss_sum, reference.loss_sum, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out.nll_sum, reference.nll_sum, rtol=1e-6, atol=1e-6)
    for got, want in zip([p.grad for p in model.parameters()], expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)

"""Packing: real tokens only through position-wise layers, same results as the padded batch."""

from __future__ import annotations

import pytest
import torch
from tiny_models import tiny_model

from seq2seq.nn import packing as packing_module
from seq2seq.nn.packing import Packing


def keep_of(lengths: list[int], total: int) -> torch.Tensor:
    return torch.arange(total)[None, :] < torch.tensor(lengths)[:, None]  # (B, T)


def test_pack_and_unpack_round_trip_with_gradients() -> None:
    keep = keep_of([4, 1, 3], 4)
    packing = Packing.of(keep)
    assert packing is not None and packing.rows.tolist() == [0, 1, 2, 3, 4, 8, 9, 10]
    x = torch.randn(3, 4, 5, requires_grad=True)
    packed = packing.pack(x)  # (8, 5)
    assert torch.equal(packed, x[keep])
    restored = packing.unpack(packed * 2)
    assert torch.equal(restored, 2 * x.detach() * keep[..., None])
    restored.sum().backward()
    assert torch.equal(x.grad, 2.0 * keep[..., None].expand_as(x))


def test_packing_only_where_it_pays() -> None:
    assert Packing.of(keep_of([4, 4], 4)) is None  # no padding
    assert Packing.of(keep_of([40] * 19 + [39], 40)) is None  # 0.1% padding: copies cost more
    assert Packing.of(keep_of([40, 30], 40)) is not None
    assert Packing.of(keep_of([4, 1], 4).to("meta")) is None  # not on CPU: would wait for the device
    assert Packing.of(torch.zeros(0, 3, dtype=torch.bool)) is None


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"positional": "rope"},
        {"positional": "alibi", "alibi_cross_attention": True},
        {"window": 2},
        {"norm": "post", "activation": "gelu"},
        {"cross_downsample": 2},
    ],
    ids=["sinusoidal", "rope", "alibi", "window", "post-norm-gelu", "downsample"],
)
def test_packed_model_equals_padded_model(overrides: dict, monkeypatch) -> None:
    """Encoder states at real positions, logits and gradients are those of the unpacked batch."""
    model = tiny_model(30, **overrides).train()
    src = torch.randint(4, 30, (3, 11))
    src[1, 6:] = 0
    src[2, 2:] = 0
    tgt = torch.randint(4, 30, (3, 7))
    keep = src != 0

    def run() -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        model.zero_grad()
        states = model.encode(src).states
        logits = model(src, tgt)
        logits.square().mean().backward()
        return states, logits, [p.grad.clone() for p in model.parameters() if p.grad is not None]

    packed_states, packed_logits, packed_grads = run()
    assert torch.equal(packed_states[~keep], torch.zeros_like(packed_states[~keep]))
    monkeypatch.setattr(packing_module.Packing, "of", classmethod(lambda cls, keep: None))
    states, logits, grads = run()
    torch.testing.assert_close(packed_states[keep], states[keep], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(packed_logits, logits, rtol=1e-5, atol=1e-5)
    for packed_grad, grad in zip(packed_grads, grads, strict=True):
        torch.testing.assert_close(packed_grad, grad, rtol=1e-4, atol=1e-6)

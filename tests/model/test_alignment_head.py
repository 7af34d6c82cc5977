"""The alignment head: its differentiable weights equal the layer's cross-attention head, the outputs
do not change, and impossible settings are refused."""

from __future__ import annotations

import pytest
import torch
from tiny_models import TINY, tiny_model

from seq2seq.errors import UserError
from seq2seq.model.builders import build_model

SRC = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])  # (B, S)
TGT_IN = torch.tensor([[2, 11, 12, 13], [2, 14, 0, 0]])  # (B, T)


@pytest.mark.parametrize("layer, head", [(0, 0), (-1, 1), (1, -1)])
@pytest.mark.parametrize("positional", ["sinusoidal", "alibi"])
def test_the_head_weights_are_the_cross_attention_of_that_head(layer: int, head: int, positional: str) -> None:
    model = tiny_model(20, seed=1, alignment_layer=layer, alignment_head=head, positional=positional,
                       alibi_cross_attention=positional == "alibi")  # fmt: skip
    logits, weights = model(SRC, TGT_IN, attending=True)
    torch.testing.assert_close(weights, model.cross_attention(SRC, TGT_IN, layer=layer)[:, head])
    torch.testing.assert_close(logits, model(SRC, TGT_IN), rtol=0, atol=0)
    assert weights.requires_grad and torch.allclose(weights.sum(-1), torch.ones(2, 4))


def test_activation_checkpointing_gives_the_same_weights_and_gradients() -> None:
    results = []
    for checkpointing in (False, True):
        model = tiny_model(20, seed=2, alignment_layer=0, alignment_head=0, checkpoint_activations=checkpointing)
        model.train()
        logits, weights = model(SRC, TGT_IN, attending=True)
        (logits.square().mean() + weights.square().sum()).backward()
        results.append((weights.detach(), [p.grad.clone() for p in model.parameters()]))
    torch.testing.assert_close(results[0][0], results[1][0])
    for plain, checkpointed in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(plain, checkpointed)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"alignment_layer": TINY["decoder_layers"], "alignment_head": 0}, "is not a decoder layer"),
        ({"alignment_layer": 0, "alignment_head": TINY["n_heads"]}, "is not a head of this model"),
        ({"alignment_layer": 0}, "set both"),
    ],
)
def test_impossible_alignment_heads_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        build_model(src_vocab_size=20, tgt_vocab_size=20, **TINY, **settings)


def test_a_model_without_an_alignment_head_says_how_to_set_one() -> None:
    with pytest.raises(UserError, match="model.alignment_layer"):
        tiny_model(20)(SRC, TGT_IN, attending=True)

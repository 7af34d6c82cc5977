"""Alignment from cross-attention: the batched most-attended columns equal each pair's own attention
argmax (padding changes nothing); proportional links cover every target token in order."""

from __future__ import annotations

import random

import torch
from tiny_models import tiny_model

from seq2seq.inference.alignment import attention_weights, most_attended, proportional_links

CPU = torch.device("cpu")


def test_batched_columns_equal_each_pairs_own():
    model = tiny_model(30, seed=4)
    rng = random.Random(0)
    pairs = [([rng.randrange(4, 30) for _ in range(rng.randint(1, 9))] + [3],
              [rng.randrange(4, 30) for _ in range(rng.randint(1, 7))]) for _ in range(11)]  # fmt: skip
    for layer in (-1, 0):
        batched = most_attended(model, pairs, pad_id=0, bos_id=2, device=CPU, layer=layer, batch_size=4)
        alone = [
            attention_weights(model, source, output, pad_id=0, bos_id=2, device=CPU, layer=layer)[
                : len(output)
            ]
            .argmax(-1)
            .tolist()
            for source, output in pairs
        ]
        assert batched == alone


def test_proportional_links_cover_every_target_in_order():
    assert proportional_links(4, 2) == [(1, 0), (3, 1)]
    assert proportional_links(2, 5) == [(0, 0), (0, 1), (1, 2), (1, 3), (1, 4)]
    assert proportional_links(0, 3) == []

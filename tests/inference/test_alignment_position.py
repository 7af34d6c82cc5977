"""The one rule for which attention an alignment reads (seq2seq.inference.alignment.alignment_position):
named settings first, then a guided model's alignment head, then the next-to-last decoder layer's mean of
heads (the last, with one layer), which agreed best with eflomal (docs/studies/alignment-layers.md)."""

from __future__ import annotations

import pytest

from seq2seq.inference.alignment import alignment_position

PLAIN = {"decoder_layers": 3}
GUIDED = {"decoder_layers": 3, "alignment_layer": 0, "alignment_head": 1}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (PLAIN, (-2, None)),
        ({"decoder_layers": 1}, (-1, None)),  # one layer: the only one there is
        ({}, (-1, None)),  # no layers recorded (no model): as one layer
        (GUIDED, (0, 1)),
        ({"decoder_layers": 3, "alignment_layer": -1, "alignment_head": None}, (-1, None)),
    ],
    ids=["plain", "one-layer", "nothing-known", "guided", "guided-layer-only"],
)
def test_the_model_decides_when_nothing_is_named(config, expected):
    assert alignment_position(config) == expected


def test_named_settings_win_and_the_rule_fills_the_unnamed_one():
    assert alignment_position(GUIDED, layer=2, head=None) == (2, None)
    assert alignment_position(GUIDED, layer=None, head=3) == (-2, 3)  # a head alone: of the rule's layer
    assert alignment_position(PLAIN, layer=-1) == (-1, None)
    assert alignment_position(PLAIN, head=0) == (-2, 0)

"""Validation helpers that need no model."""

from seq2seq.train.validation import evenly_spaced


def test_evenly_spaced_covers_the_whole_range() -> None:
    assert evenly_spaced(10, 3) == [0, 4, 9]
    assert evenly_spaced(5, None) == [0, 1, 2, 3, 4]
    assert evenly_spaced(5, 9) == [0, 1, 2, 3, 4]
    chosen = evenly_spaced(1543, 500)
    assert len(set(chosen)) == 500 and chosen[0] == 0 and chosen[-1] == 1542

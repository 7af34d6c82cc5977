"""The verse aligner finds shifted numbering, merges and missing verses on synthetic chapters."""

import random

from seq2seq.data.bible.alignment import LengthModel, Segment, align, fit_length_model

MODEL = LengthModel(ratio=1.0, variance=1.0)


def _chapter(lengths, prefix="v"):
    return [Segment(f"{prefix}.{k + 1}", n) for k, n in enumerate(lengths)]


def _pairs(beads):
    return [(bead.a, bead.b) for bead in beads]


def test_identical_numbering_pairs_every_verse_one_to_one():
    lengths = [random.Random(k).randint(30, 200) for k in range(40)]
    beads = align(_chapter(lengths), _chapter(lengths), model=MODEL)
    assert _pairs(beads) == [((k,), (k,)) for k in range(40)]


def test_shifted_numbering_is_realigned():
    """b numbers like the Hebrew text: an empty first slot, everything one later, the last two merged."""
    rng = random.Random(0)
    text = [rng.randint(30, 200) for _ in range(30)]
    a = _chapter(text)
    b = _chapter([0] + text[:28] + [text[28] + text[29]])  # 30 slots, as in the versification
    pairs = _pairs(align(a, b, model=MODEL))
    assert pairs[0] == ((), (0,))  # the empty slot is left unpaired
    assert pairs[1:29] == [((k,), (k + 1,)) for k in range(28)]
    assert pairs[29] == ((28, 29), (29,))


def test_shared_keys_place_a_shift_that_lengths_cannot():
    """Verses of equal length: only the keys tell that b is one verse late."""
    a = [Segment(f"v.{k}", 80, frozenset({f"k{k}", f"k{k}b"})) for k in range(20)]
    b = [Segment("v.0", 0)] + [Segment(f"v.{k + 1}", 80, frozenset({f"k{k}", f"k{k}b"})) for k in range(19)]
    pairs = _pairs(align(a, b, model=MODEL))
    assert ((3,), (4,)) in pairs and ((3,), (3,)) not in pairs


def test_wide_shift_beyond_the_first_band_is_found():
    rng = random.Random(1)
    text = [rng.randint(30, 300) for _ in range(60)]
    a = _chapter(text)
    b = _chapter([0] * 9 + text[:51])  # nine empty slots: a shift wider than the default band
    pairs = _pairs(align(a, b, model=MODEL, band=4))
    assert ((0,), (9,)) in pairs and ((50,), (59,)) in pairs


def test_fit_length_model_recovers_the_ratio():
    rng = random.Random(2)
    a = [rng.randint(20, 300) for _ in range(2000)]
    b = [round(0.9 * n + rng.gauss(0, 3)) for n in a]
    model = fit_length_model(a, b)
    assert abs(model.ratio - 0.9) < 0.01
    assert 0.01 < model.variance < 1.0


def test_empty_inputs_align_to_nothing():
    assert align([], [], model=MODEL) == []
    assert _pairs(align(_chapter([10, 20]), [], model=MODEL)) == [((0,), ()), ((1,), ())]

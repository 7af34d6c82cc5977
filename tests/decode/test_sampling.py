"""Sampling: reproducible with a seeded generator, greedy at top-k = 1, honest scores."""

from __future__ import annotations

import pytest
import torch
from decode_helpers import IDS, eos_biased, sources, teacher_forced

from seq2seq.decode import greedy_search, sampling_search
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError


def _sample(model, src, seed, **kwargs):
    generator = torch.Generator().manual_seed(seed)
    out = sampling_search(model, src, SearchOptions(**kwargs), generator=generator, **IDS)
    return [[h.tokens for h in samples] for samples in out]


def test_same_seed_same_samples_other_seed_other_samples():
    model = eos_biased(eos_bias=-1.0, seed=1, sharpness=1.0)
    src = sources([6, 4, 8], seed=2)
    first = _sample(model, src, 5, nbest=4, temperature=1.3)
    assert first == _sample(model, src, 5, nbest=4, temperature=1.3)
    assert first != _sample(model, src, 6, nbest=4, temperature=1.3)
    assert len({tuple(t) for t in first[0]}) > 1  # samples of one sentence differ


def test_top_k_one_and_tiny_top_p_equal_greedy():
    model = eos_biased(eos_bias=-1.0, seed=3, sharpness=1.0)
    src = sources([6, 4, 8], seed=4)
    greedy = [[h.tokens] for h in greedy_search(model, src, **IDS)]
    assert _sample(model, src, 0, top_k=1, temperature=3.0) == greedy
    assert _sample(model, src, 1, top_p=1e-6) == greedy


def test_sample_scores_are_model_logprobs():
    model = eos_biased(eos_bias=-1.0, seed=5, sharpness=1.0)
    src = sources([5, 7], seed=6)
    out = sampling_search(
        model, src, SearchOptions(top_k=3, nbest=3), generator=torch.Generator().manual_seed(0), **IDS
    )
    for row, samples in enumerate(out):
        forced = teacher_forced(model, src[row : row + 1], [h.tokens for h in samples])
        assert [h.log_prob for h in samples] == pytest.approx([sum(lp) for lp in forced], abs=1e-4)


def test_bad_sampling_arguments():
    model = eos_biased()
    with pytest.raises(UserError, match="temperature"):
        sampling_search(model, sources([3]), SearchOptions(temperature=0.0))
    with pytest.raises(UserError, match="top_p"):
        sampling_search(model, sources([3]), SearchOptions(top_p=0.0))

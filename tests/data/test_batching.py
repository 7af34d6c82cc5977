"""Token-budget batches: budget, coverage, per-epoch shuffling, exact resume, sharding, padding."""

import itertools

import numpy as np
import pytest

from seq2seq.data.batching import TokenBatchSampler, padding_waste


def _lengths(n=3000, seed=0):
    """Source/target lengths shaped like subword-tokenised verses: skewed, correlated, ratio noise."""
    rng = np.random.default_rng(seed)
    src = np.clip(rng.lognormal(np.log(28), 0.5, n), 2, 120).astype(np.int64)
    tgt = np.clip(src * rng.normal(1.0, 0.12, n), 2, 120).astype(np.int64)
    return src, tgt


def _cost(batch, src, tgt):
    return len(batch) * max(src[batch].max(), tgt[batch].max())


def test_batches_respect_the_budget_and_cover_every_example_once():
    src, tgt = _lengths()
    sampler = TokenBatchSampler(src, tgt, max_tokens=1000, seed=3)
    batches = list(sampler)
    assert len(batches) == len(sampler) == sampler.n_batches_total
    assert all(_cost(b, src, tgt) <= 1000 for b in batches)
    assert sorted(itertools.chain.from_iterable(batches)) == list(range(len(src)))


def test_an_example_longer_than_the_budget_gets_its_own_batch():
    src, tgt = np.array([5, 300, 6, 7]), np.array([5, 10, 400, 7])
    batches = TokenBatchSampler(src, tgt, max_tokens=100, seed=0, shuffle=False).batches(0)
    assert sorted(map(sorted, batches)) == [[0, 3], [1], [2]]


def test_epochs_are_deterministic_and_differ_from_each_other():
    src, tgt = _lengths()
    a = TokenBatchSampler(src, tgt, max_tokens=2000, seed=7)
    b = TokenBatchSampler(src, tgt, max_tokens=2000, seed=7)
    assert a.batches(0) == b.batches(0) and a.batches(5) == b.batches(5)
    assert a.batches(0) != a.batches(1)
    assert len(a.batches(0)) == len(a.batches(1))  # the same boundaries every epoch
    assert TokenBatchSampler(src, tgt, max_tokens=2000, seed=8).batches(0) != a.batches(0)


def test_without_shuffle_batches_come_in_length_order():
    src, tgt = _lengths(500)
    batches = TokenBatchSampler(src, tgt, max_tokens=2000, seed=0, shuffle=False).batches(0)
    longest = [int(np.maximum(src[b], tgt[b]).max()) for b in batches]
    assert longest == sorted(longest)


def test_iteration_advances_the_epoch_and_set_epoch_keeps_a_restored_position():
    src, tgt = _lengths(400)
    sampler = TokenBatchSampler(src, tgt, max_tokens=1500, seed=1)
    first = list(sampler)
    assert sampler.state_dict()["epoch"] == 1 and sampler.state_dict()["position"] == 0
    assert list(sampler) == sampler.batches(1) != first
    sampler.set_epoch(4)
    iterator = iter(sampler)
    next(iterator)
    sampler.set_epoch(4)  # what a training loop does at the top of every epoch: no reset
    assert sampler.position == 1


def test_resuming_mid_epoch_yields_exactly_the_uninterrupted_batches():
    src, tgt = _lengths()
    reference = TokenBatchSampler(src, tgt, max_tokens=1200, seed=11)
    uninterrupted = [list(reference) for _ in range(3)]  # epochs 0, 1, 2
    interrupted = TokenBatchSampler(src, tgt, max_tokens=1200, seed=11)
    seen = list(interrupted)  # epoch 0
    iterator = iter(interrupted)
    seen_epoch1 = [next(iterator) for _ in range(17)]
    state = interrupted.state_dict()
    assert state == {
        "epoch": 1,
        "position": 17,
        "n_examples": len(src),
        "n_batches": len(uninterrupted[1]),
        "seed": 11,
        "world_size": 1,
    }
    assert all(type(v) is int for v in state.values())

    resumed = TokenBatchSampler(src, tgt, max_tokens=1200, seed=11)
    resumed.load_state_dict(state)
    resumed.set_epoch(1)
    rest_epoch1 = list(resumed)
    assert seen == uninterrupted[0]
    assert seen_epoch1 + rest_epoch1 == uninterrupted[1]
    assert list(resumed) == uninterrupted[2]


def test_state_from_different_data_restarts_the_epoch(caplog):
    src, tgt = _lengths(300)
    sampler = TokenBatchSampler(src, tgt, max_tokens=1000, seed=2)
    sampler.load_state_dict(
        {"epoch": 3, "position": 5, "n_examples": 999, "n_batches": 1, "seed": 2, "world_size": 1}
    )
    assert (sampler.epoch, sampler.position) == (3, 0)
    assert "restarting epoch 3" in caplog.text


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_get_equal_numbers_of_batches_that_together_cover_the_epoch(world_size):
    src, tgt = _lengths(1000)
    samplers = [
        TokenBatchSampler(src, tgt, max_tokens=1500, seed=5, rank=r, world_size=world_size)
        for r in range(world_size)
    ]
    per_rank = [s.batches(2) for s in samplers]
    assert len({len(batches) for batches in per_rank}) == 1
    assert all(len(s) == len(per_rank[0]) for s in samplers)
    covered = {i for batches in per_rank for batch in batches for i in batch}
    assert covered == set(range(len(src)))
    whole = TokenBatchSampler(src, tgt, max_tokens=1500, seed=5).batches(2)
    assert sum(map(len, per_rank)) - len(whole) < world_size  # only the remainder is repeated


def test_padding_waste_is_small_on_verse_like_lengths():
    src, tgt = _lengths(5000)
    for max_tokens in (4096, 8192):
        sampler = TokenBatchSampler(src, tgt, max_tokens=max_tokens, seed=0)
        waste = padding_waste(sampler.batches(0), src, tgt)
        assert waste <= 0.10, f"padding waste {waste:.3f} at max_tokens={max_tokens}"


def test_joint_sequences_count_source_plus_target_against_the_budget():
    """A decoder-only model's batch is n rows of S + T columns (source, then target)."""
    src, tgt = _lengths()
    sampler = TokenBatchSampler(src, tgt, max_tokens=1000, seed=3, joint_sequence=True)
    batches = list(sampler)
    assert all(len(b) * (src[b].max() + tgt[b].max()) <= 1000 for b in batches)
    assert max(len(b) * (src[b].max() + tgt[b].max()) for b in batches) > 900  # the budget is used
    assert sorted(itertools.chain.from_iterable(batches)) == list(range(len(src)))
    plain = TokenBatchSampler(src, tgt, max_tokens=1000, seed=3)
    assert len(sampler) > 1.5 * len(plain)  # about twice the batches for the same budget


def test_joint_sequence_padding_waste_stays_as_low_as_the_encoder_decoders():
    src, tgt = _lengths(5000)
    for max_tokens in (4096, 8192):
        joint = TokenBatchSampler(src, tgt, max_tokens=max_tokens, seed=0, joint_sequence=True)
        waste = padding_waste(joint.batches(0), src, tgt)
        assert waste <= 0.10, f"padding waste {waste:.3f} at max_tokens={max_tokens}"


def test_padding_waste_counts_both_sides():
    src, tgt = np.array([2, 4]), np.array([3, 3])
    assert padding_waste([[0, 1]], src, tgt) == pytest.approx(1 - 12 / 14)


def test_bad_arguments():
    with pytest.raises(ValueError, match="rank 2"):
        TokenBatchSampler(np.array([1]), np.array([1]), max_tokens=10, seed=0, rank=2, world_size=2)
    with pytest.raises(ValueError, match="max_tokens"):
        TokenBatchSampler(np.array([1]), np.array([1]), max_tokens=0, seed=0)
    empty = TokenBatchSampler(np.array([], dtype=int), np.array([], dtype=int), max_tokens=10, seed=0)
    assert len(empty) == 0 and list(empty) == []

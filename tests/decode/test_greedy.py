"""Greedy search: teacher-forced scores, batch independence, limits, prefixes, shrinking batches."""

from __future__ import annotations

import pytest
import torch
from decode_helpers import BOS, EOS, IDS, PAD, eos_biased, sources, teacher_forced

from seq2seq.decode import greedy_search
from seq2seq.decode.options import SearchOptions


def test_greedy_picks_the_argmax_and_scores_by_teacher_forcing():
    model = eos_biased(eos_bias=-2.0, seed=1)
    src = sources([7, 3, 9], seed=2)
    for row, hyp in enumerate(greedy_search(model, src, **IDS)):
        forced = teacher_forced(model, src[row : row + 1], [hyp.tokens])[0]
        assert hyp.positional_scores == pytest.approx(forced, abs=1e-4)
        assert hyp.score == hyp.log_prob == pytest.approx(sum(forced), abs=1e-4)
        tgt_in = torch.tensor([[2, *hyp.tokens]])
        logits = model(src[row : row + 1], tgt_in)[0]  # (T, V)
        logits[:, [PAD, BOS]] = float("-inf")  # never generated
        argmax = logits.argmax(dim=-1).tolist()
        limit = int(1.2 * int((src[row] != PAD).sum()) + 10)
        assert argmax[:-1] == hyp.tokens and (argmax[-1] == EOS or len(hyp.tokens) == limit)
        assert len(hyp.tokens) >= 2


def test_greedy_output_does_not_depend_on_the_batch():
    model = eos_biased(eos_bias=-1.0, seed=3)
    src = sources([2, 10, 5, 7, 3, 9], seed=4)
    together = greedy_search(model, src, **IDS)
    assert len({len(h.tokens) for h in together}) > 2  # rows finish at different steps
    for row in range(src.shape[0]):
        length = int((src[row] != 0).sum())
        alone = greedy_search(model, src[row : row + 1, :length], **IDS)[0]
        assert alone.tokens == together[row].tokens
        assert alone.score == pytest.approx(together[row].score, abs=1e-4)


def test_greedy_limits_prefix_and_ngram_blocking():
    src = sources([4, 9], seed=5)
    talkative = eos_biased(eos_bias=-30.0, seed=6)
    out = greedy_search(talkative, src, SearchOptions(max_len_a=2.0, max_len_b=1), **IDS)
    assert [len(h.tokens) for h in out] == [9, 19]
    assert all(len(set(zip(h.tokens, h.tokens[1:]))) < len(h.tokens) - 1 for h in out)  # repeats bigrams
    blocked = greedy_search(
        talkative, src, SearchOptions(max_len_a=2.0, max_len_b=1, no_repeat_ngram_size=2), **IDS
    )
    assert all(len(set(zip(h.tokens, h.tokens[1:]))) == len(h.tokens) - 1 for h in blocked)
    terse = eos_biased(eos_bias=30.0, seed=6)
    assert [h.tokens for h in greedy_search(terse, src, **IDS)] == [[], []]
    assert [len(h.tokens) for h in greedy_search(terse, src, SearchOptions(min_len=2), **IDS)] == [2, 2]
    prefixed = greedy_search(terse, src, prefix=[[7, 8], [5]], **IDS)
    assert [h.tokens for h in prefixed] == [[7, 8], [5]]


def test_greedy_drops_finished_rows():
    model = eos_biased(eos_bias=-30.0, seed=7)
    src = sources([2, 2, 2, 12], seed=8)  # three rows end after 3 tokens, one after 13
    greedy_search(model, src, SearchOptions(max_len_a=1.0, max_len_b=1), **IDS)
    assert model.rows_per_step[:4] == [4, 4, 4, 4] and set(model.rows_per_step[4:]) == {1}

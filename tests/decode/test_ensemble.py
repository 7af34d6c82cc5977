"""Ensembles: one member equals the model alone, two copies equal one model, and two different models
score every step with the mean of their log-probabilities (checked by teacher forcing)."""

from __future__ import annotations

import pytest
import torch
from decode_helpers import EOS, IDS, sources, teacher_forced, tiny_model

from seq2seq.decode import beam_search, greedy_search
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError

LIMITS = SearchOptions(max_len_a=1.0, max_len_b=3)


def tokens_and_scores(results):
    return [[h.tokens for h in row] for row in results], [[h.score for h in row] for row in results]


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_an_ensemble_of_one_or_of_two_copies_equals_the_model(search):
    model = tiny_model(seed=3)
    src = sources([5, 7, 3], seed=4)

    def run(m):
        if search == "greedy":
            return [[h] for h in greedy_search(m, src, LIMITS, **IDS)]
        return beam_search(m, src, LIMITS.replace(beam_size=4, nbest=2), **IDS)

    alone_tokens, alone_scores = tokens_and_scores(run(model))
    for members in ([model], [model, model]):
        tokens, scores = tokens_and_scores(run(Ensemble(members).eval()))
        assert tokens == alone_tokens
        for mine, theirs in zip(scores, alone_scores):
            assert mine == pytest.approx(theirs, abs=1e-5)


def test_two_models_score_each_step_with_the_mean_of_their_log_probabilities():
    first, second = tiny_model(seed=5), tiny_model(seed=6)
    src = sources([6, 4, 8], seed=7)
    hypotheses = greedy_search(Ensemble([first, second]).eval(), src, LIMITS, **IDS)
    alone = [h.tokens for h in greedy_search(first, src, LIMITS, **IDS)]
    assert alone != [h.tokens for h in hypotheses]  # the ensemble decides differently from a member
    for row, hypothesis in enumerate(hypotheses):
        sentence = src[row : row + 1, : int((src[row] != 0).sum())]
        per_model = [teacher_forced(model, sentence, [hypothesis.tokens])[0] for model in (first, second)]
        mean = [(a + b) / 2 for a, b in zip(*per_model)]
        assert hypothesis.positional_scores == pytest.approx(mean, abs=1e-5)
        assert hypothesis.tokens == [] or hypothesis.tokens[-1] != EOS


def test_members_must_share_the_vocabulary():
    with pytest.raises(UserError, match="differ in vocabulary sizes"):
        Ensemble([tiny_model(vocab=12), tiny_model(vocab=14)])
    with pytest.raises(UserError, match="at least one model"):
        Ensemble([])


def test_kv_caches_of_all_members_are_reordered_together():
    first, second = tiny_model(seed=8), tiny_model(seed=9)
    ensemble = Ensemble([first, second]).eval()
    src = sources([5, 5], seed=10)
    with torch.inference_mode():
        state = ensemble.init_state(ensemble.encode(src), beam_size=2)
        ensemble.decode_step(torch.full((4, 1), 2), state)
        state.reorder(torch.tensor([1, 1, 2, 3]), memory=False)
    for member_state in state.states:
        cache = member_state.caches[0]
        keys = cache._k[:, :, : cache.length]
        assert torch.equal(keys[0], keys[1])  # row 0 now holds row 1's keys, in every member

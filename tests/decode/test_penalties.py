"""The pure pieces of search, on hand-made tensors."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.penalties import (
    force_tokens,
    length_penalty,
    limit_lengths_,
    max_output_lengths,
    no_repeat_ngram_allowed,
    top_k_top_p_filter,
)
from seq2seq.decode.step_rules import prepare_prefix
from seq2seq.errors import UserError

NEG = float("-inf")


def test_length_penalty_is_gnmt_and_alpha_zero_is_one():
    assert length_penalty(7, 0.0) == 1.0
    assert length_penalty(1, 1.0) == 1.0
    assert length_penalty(7, 0.6) == pytest.approx((12 / 6) ** 0.6)
    lengths = torch.tensor([1, 7])
    assert torch.allclose(length_penalty(lengths, 2.0), torch.tensor([1.0, 4.0]))


def test_max_output_lengths_floor_and_clamp():
    limits = max_output_lengths(torch.tensor([0, 5, 10]), a=1.5, b=-3)
    assert limits.tolist() == [0, 4, 12]


def test_limit_lengths_blocks_eos_early_and_forces_it_at_the_limit():
    logprobs = torch.log_softmax(torch.randn(3, 6), dim=-1)
    original = logprobs.clone()
    out = limit_lengths_(
        logprobs.clone(), step=1, min_len=2, max_lens=torch.tensor([1, 5, 0]), first_limit=0, eos_id=3
    )
    assert out[1, 3] == NEG and torch.equal(out[1, :3], original[1, :3])  # eos blocked before min_len
    for row in (0, 2):  # at the limit: only eos, with its model log-probability (max_len beats min_len)
        assert out[row, 3] == original[row, 3]
        assert torch.isneginf(out[row, [0, 1, 2, 4, 5]]).all()


def test_limit_lengths_trusts_first_limit_to_skip_far_rows():
    logprobs = torch.zeros(2, 5)
    out = limit_lengths_(logprobs, step=3, min_len=0, max_lens=torch.tensor([9, 9]), first_limit=9, eos_id=3)
    assert torch.equal(out, torch.zeros(2, 5))


def test_no_repeat_ngram_blocks_exactly_the_repeating_token():
    tokens = torch.tensor([[5, 6, 7, 5, 6], [5, 6, 7, 8, 9]])
    allowed = no_repeat_ngram_allowed(tokens, 3, 10)  # last two (5, 6) were followed by 7
    assert (~allowed[0]).nonzero().flatten().tolist() == [7]
    assert allowed[1].all()
    bigram = no_repeat_ngram_allowed(tokens, 2, 10)  # after 6 came 7; after 9 nothing yet
    assert (~bigram[0]).nonzero().flatten().tolist() == [7] and bigram[1].all()
    unigram = no_repeat_ngram_allowed(tokens[:1], 1, 10)
    assert sorted((~unigram[0]).nonzero().flatten().tolist()) == [5, 6, 7]
    assert no_repeat_ngram_allowed(tokens[:, :2], 3, 10).all()  # too short to repeat anything


def test_force_tokens_keeps_the_model_logprob():
    logprobs = torch.log_softmax(torch.randn(2, 5), dim=-1)
    out = force_tokens(logprobs, torch.tensor([4, 0]), free_id=0)
    assert out[0, 4] == logprobs[0, 4] and torch.isneginf(out[0, :4]).all()
    assert torch.equal(out[1], logprobs[1])


def test_top_k_top_p_filter():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.isfinite(top_k_top_p_filter(logits, top_k=2)).tolist() == [[True, True, False, False]]
    assert torch.isfinite(top_k_top_p_filter(logits, top_p=0.75)).tolist() == [[True, True, False, False]]
    assert torch.isfinite(top_k_top_p_filter(logits, top_p=0.81)).tolist() == [[True, True, True, False]]
    assert torch.isfinite(top_k_top_p_filter(logits, top_p=1e-9)).tolist() == [[True, False, False, False]]
    assert torch.equal(top_k_top_p_filter(logits), logits)
    shuffled = logits[:, [2, 0, 3, 1]]  # the filter follows values, not positions
    kept = torch.isfinite(top_k_top_p_filter(shuffled, top_p=0.75))
    assert kept.tolist() == [[False, True, False, True]]
    assert math.isclose(top_k_top_p_filter(logits, top_k=1)[0, 0].item(), logits[0, 0].item())


def test_prepare_prefix_forms():
    kwargs = dict(device=torch.device("cpu"), ids=SpecialIds(bos=2, eos=3, pad=0))
    assert prepare_prefix([5, 6], 2, **kwargs).tolist() == [[5, 6], [5, 6]]
    assert prepare_prefix([[5], [6, 7], []], 3, **kwargs).tolist() == [[5, 0], [6, 7], [0, 0]]
    assert prepare_prefix(torch.tensor([[5, 0], [6, 7]]), 2, **kwargs).tolist() == [[5, 0], [6, 7]]
    assert prepare_prefix([[], []], 2, **kwargs) is None
    with pytest.raises(UserError, match="2 prefixes for 3 sentences"):
        prepare_prefix([[5], [6]], 3, **kwargs)
    with pytest.raises(UserError, match="eos"):
        prepare_prefix([[5, 3]], 1, **kwargs)

"""Helpers and rules shared by the searches."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from decode_helpers import IDS, eos_biased, sources, teacher_forced

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode import beam_search, greedy_search
from seq2seq.decode.constraints import Avoided
from seq2seq.decode.hypotheses import SPECIAL_IDS, SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.step_rules import next_token_logprobs_


def test_next_token_logprobs_equal_log_softmax_and_reuse_float32_logits() -> None:
    logits = torch.randn(6, 50) * 5
    expected = torch.log_softmax(logits, dim=-1)
    buffer = logits.clone()
    out = next_token_logprobs_(buffer)
    assert torch.equal(out, expected)
    assert out.data_ptr() == buffer.data_ptr()  # no new (N, V) tensor


def test_next_token_logprobs_of_bfloat16_are_float32_and_leave_the_input() -> None:
    logits = (torch.randn(4, 30) * 5).bfloat16()
    before = logits.clone()
    out = next_token_logprobs_(logits)
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.log_softmax(logits.float(), dim=-1))
    assert torch.equal(logits, before)


def test_cache_steps_covers_bos_and_every_output_token_up_to_a_bound():
    from seq2seq.decode.step_rules import cache_steps

    assert cache_steps(0) == 1 and cache_steps(30) == 31
    assert cache_steps(1000) == 128  # longer outputs grow the caches by doubling


def test_the_default_special_ids_are_every_tokenizers() -> None:
    """A search without `ids=` treats pad, bos and eos as a trained seq2seq tokenizer numbers them."""
    tokenizer = Tokenizer.train(
        ["the dog sees the cat", "a man finds water"] * 20, vocab_size=20, model_type="bpe"
    )
    assert SPECIAL_IDS == SpecialIds() == SpecialIds.of(tokenizer)


PREFIXES = [[9, 9, 4], [11, 6]]


def _completes(tokens: list[int], phrase: list[int], after: int) -> bool:
    """Whether `phrase` ends in `tokens` at a position from `after` on."""
    width = len(phrase)
    ends = range(max(after, width - 1), len(tokens))
    return any(tokens[end - width + 1 : end + 1] == phrase for end in ends)


@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("rule", ["avoid", "no_repeat_ngram_size"])
def test_a_forced_prefix_is_written_where_the_other_rules_would_bar_it(beam_size, rule) -> None:
    """A prefix holding an avoided phrase or repeating an n-gram is still written, with the model's own
    log-probabilities (CTranslate2's target_prefix does the same); the rules bar what the search chooses
    after it. Before, the forced step had no allowed token: greedy wrote pad, beam search nothing."""
    model, src = eos_biased(eos_bias=-2.0, seed=12), sources([5, 7], seed=13)
    phrases = [[9, 4], [11]]  # each inside a prefix
    options = SearchOptions(beam_size=beam_size, nbest=beam_size, max_len_a=0.0, max_len_b=9)
    if rule == "no_repeat_ngram_size":
        options = dataclasses.replace(options, no_repeat_ngram_size=1)
    avoid = Avoided.of(phrases, torch.device("cpu")) if rule == "avoid" else None
    search = greedy_search if beam_size == 1 else beam_search
    found = search(model, src, options, prefix=PREFIXES, avoid=avoid, **IDS)
    found = [[nbest] for nbest in found] if beam_size == 1 else found
    for row, (prefix, nbest) in enumerate(zip(PREFIXES, found)):
        assert len(nbest) == beam_size
        forced = teacher_forced(model, src[row : row + 1], [h.tokens for h in nbest])
        for hypothesis, scores in zip(nbest, forced):
            assert hypothesis.tokens[: len(prefix)] == prefix
            assert hypothesis.positional_scores == pytest.approx(scores, abs=1e-4)
            free = hypothesis.tokens[len(prefix) :]
            if rule == "avoid":
                assert not any(_completes(hypothesis.tokens, p, after=len(prefix)) for p in phrases)
            else:
                assert len(set(free)) == len(free) and not set(free) & set(prefix)

"""Helpers shared by the searches."""

from __future__ import annotations

import torch

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.hypotheses import SPECIAL_IDS, SpecialIds
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

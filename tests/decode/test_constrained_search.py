"""Constrained beam search on tiny fixed models: phrases always met, plain beam search unchanged without
them, beam 1's banks, negative constraints, ensembles, decoder-only models, word boundaries (a phrase
that is a word's start, as "god" is of "gods") and bad input."""

from __future__ import annotations

import random
import re

import pytest
import tiny_models
import torch
from decode_helpers import BOS, EOS, IDS, PAD, sources, teacher_forced, tiny_model
from scripted_model import Scripted

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.beam import beam_search
from seq2seq.decode.constrained import constrained_beam_search
from seq2seq.decode.constraints import (
    Avoided,
    ConstraintState,
    allocation_order,
    continuing_pieces,
    suffix_progress,
    word_rules_,
)
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import search
from seq2seq.errors import UserError

VOCAB = 20
BEAM = SearchOptions(beam_size=4, nbest=2, max_len_a=2.0, max_len_b=4)
CPU = torch.device("cpu")


def contains(tokens: list[int], phrase: list[int]) -> bool:
    return any(tokens[i : i + len(phrase)] == phrase for i in range(len(tokens) - len(phrase) + 1))


def assert_met(results, constraints) -> None:
    for nbest, phrases in zip(results, constraints):
        best = nbest[0]
        assert all(contains(best.tokens, phrase) for phrase in phrases), (best.tokens, phrases)
        assert best.constraints_met == best.constraints_total == len({tuple(p) for p in phrases})


# Multi-piece phrases, two phrases sharing a prefix, a one-piece phrase, a sentence without any.
CONSTRAINTS = [[[7, 8, 9]], [[5, 6], [5, 7]], [[13]], [], [[10, 11], [12]]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_phrase_is_met_and_scores_are_the_models_own(seed):
    model = tiny_model(VOCAB, seed=seed)
    src = sources([5, 7, 3, 6, 4], vocab=VOCAB, seed=seed)
    results = constrained_beam_search(model, src, BEAM, CONSTRAINTS, **IDS)
    assert_met(results, CONSTRAINTS)
    for row, nbest in enumerate(results):
        expected = teacher_forced(model, src[row : row + 1], [h.tokens for h in nbest])
        for hypothesis, logprobs in zip(nbest, expected):
            assert hypothesis.positional_scores == pytest.approx(logprobs, abs=1e-4)


def test_a_phrase_equal_to_the_forced_prefix_is_met_by_it():
    model, src = tiny_model(VOCAB), sources([5, 6], vocab=VOCAB)
    constraints = [[[7, 8]], [[9], [4, 4]]]
    results = constrained_beam_search(model, src, BEAM, constraints, prefix=[[7, 8], [9]], **IDS)
    assert_met(results, constraints)
    assert results[0][0].tokens[:2] == [7, 8] and results[1][0].tokens[:1] == [9]


@pytest.mark.parametrize(
    "options",
    [BEAM, SearchOptions(beam_size=3, nbest=3, length_penalty=1.0, stop_early=False, max_len_b=6)],
)
def test_without_phrases_the_output_is_plain_beam_search(options):
    model, src = tiny_model(VOCAB, seed=4), sources([5, 7, 3, 6], vocab=VOCAB, seed=4)
    plain = beam_search(model, src, options, **IDS)
    empty = constrained_beam_search(model, src, options, [[], [], [], []], **IDS)
    routed = search(model, src, options, constraints=[[], [], [], []], **IDS)
    for found in (empty, routed):
        assert [[h.tokens for h in n] for n in found] == [[h.tokens for h in n] for n in plain]
        assert [h.score for n in found for h in n] == pytest.approx([h.score for n in plain for h in n])


def test_with_one_beam_the_highest_bank_wins_so_the_phrase_comes_first():
    model, src = tiny_model(VOCAB, seed=1), sources([5, 7, 3], vocab=VOCAB, seed=1)
    constraints = [[[7, 8, 9]], [[13]], [[11, 12]]]
    one = SearchOptions(beam_size=1, nbest=1, max_len_a=2.0, max_len_b=4)
    results = constrained_beam_search(model, src, one, constraints, **IDS)
    assert [nbest[0].tokens[: len(phrases[0])] for nbest, phrases in zip(results, constraints)] == [
        [7, 8, 9], [13], [11, 12],
    ]  # fmt: skip
    greedy = search(model, src, SearchOptions(max_len_a=2.0, max_len_b=4), constraints=constraints, **IDS)
    assert [n[0].tokens for n in greedy] == [n[0].tokens for n in results]


def test_the_length_limit_ends_the_search_with_the_hypothesis_that_met_most():
    model, src = tiny_model(VOCAB), sources([3], vocab=VOCAB)
    short = SearchOptions(beam_size=3, nbest=3, max_len_a=0.0, max_len_b=3)
    results = constrained_beam_search(model, src, short, [[[7, 8], [9, 10, 11]]], **IDS)
    met = [h.constraints_met for h in results[0]]
    assert met[0] == 1 and met == sorted(met, reverse=True) and results[0][0].constraints_total == 2
    assert all(len(h.tokens) <= 3 for h in results[0])


def test_an_ensemble_and_a_decoder_only_model_meet_their_phrases():
    model, src = tiny_model(VOCAB, seed=2), sources([5, 6], vocab=VOCAB, seed=2)
    constraints = [[[7, 8]], [[9], [10, 11]]]
    single = constrained_beam_search(model, src, BEAM, constraints, **IDS)
    twice = constrained_beam_search(Ensemble([model, model]).eval(), src, BEAM, constraints, **IDS)
    assert [n[0].tokens for n in twice] == [n[0].tokens for n in single]
    decoder_only = tiny_models.tiny_decoder_only(VOCAB, pad_id=PAD, sharpness=6.0)
    assert_met(constrained_beam_search(decoder_only, src, BEAM, constraints, **IDS), constraints)


@pytest.mark.parametrize("kind", ["greedy", "beam", "sample"])
def test_avoided_phrases_are_never_produced(kind):
    model, src = tiny_model(VOCAB, seed=3), sources([5, 7, 3, 6], vocab=VOCAB, seed=3)
    options = {
        "greedy": SearchOptions(max_len_b=8),
        "beam": BEAM,
        "sample": SearchOptions(sampling=True, nbest=4, max_len_b=8, seed=1),
    }[kind]
    generator = torch.Generator().manual_seed(0)
    plain = search(model, src, options, generator=generator, **IDS)
    produced = [h.tokens for nbest in plain for h in nbest]
    one_piece = max(range(4, VOCAB), key=lambda t: sum(tokens.count(t) for tokens in produced))
    pair = next(tokens[i : i + 2] for tokens in produced for i in range(len(tokens) - 1))
    avoided = [[one_piece], pair]
    found = search(model, src, options, avoid=Avoided.of(avoided, CPU), generator=generator, **IDS)
    assert all(not contains(h.tokens, phrase) for n in found for h in n for phrase in avoided)
    assert any(pair[0] in h.tokens for n in found for h in n) or pair[0] == one_piece  # still free


def test_progress_is_the_longest_suffix_that_starts_a_phrase():
    phrases = torch.tensor([[[4, 4, 5], [4, 6, -1]]])  # (1, 2, 3)
    lengths = torch.tensor([[3, 2]])
    windows = torch.tensor([[4, 4, 4], [9, 4, 4], [4, 4, 5], [4, 4, 6], [4, 5, 7]])  # (5, 3)
    progress = suffix_progress(windows, phrases.expand(5, -1, -1), lengths.expand(5, -1))
    assert progress.tolist() == [[2, 1], [2, 1], [3, 0], [0, 2], [0, 0]]
    state = ConstraintState.start([[[4, 4, 5], [4, 6]]], copies=1, device=CPU)
    outputs = torch.tensor([[2, 4, 4, 4]])  # bos then "4 4 4": "4 4 5" still one token away
    met, progress = state.after(torch.tensor([0, 0]), torch.tensor([5, 6]), outputs)
    assert met.tolist() == [[True, False], [False, True]] and progress.tolist() == [[3, 0], [0, 2]]


def test_the_beam_is_filled_rank_by_rank_across_banks_highest_first():
    scores = torch.tensor([[-1.0, -2.0, -3.0, -4.0, -5.0, float("-inf")]])
    banks = torch.tensor([[0, 0, 1, 2, 1, 2]])
    assert allocation_order(scores, banks, top_bank=2).tolist() == [[3, 2, 0, 4, 1, 5]]


def test_bad_constraints_get_one_line_errors():
    model, src = tiny_model(VOCAB), sources([5, 6], vocab=VOCAB)
    cases = {
        "more than the beam of 4": [[[4], [5], [6], [7], [8]], []],
        "empty or holds pad": [[[]], []],
        r"holds pad, bos or eos \(ids 0, 2, 3\)": [[[7, EOS]], []],
        "got constraints for 1 sentences": [[[7]]],
    }
    for message, constraints in cases.items():
        with pytest.raises(UserError, match=message) as error:
            constrained_beam_search(model, src, BEAM, constraints, ids=SpecialIds(bos=2, eos=EOS, pad=PAD))
        assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="not sampling"):
        search(model, src, SearchOptions(sampling=True), constraints=[[[7]], []], **IDS)


def test_no_word_continuing_piece_follows_a_completed_phrase():
    assert continuing_pieces(["\u2581Dios", "cre", "ó", ",", "\u2581", "<unk>", "9"]).tolist() == [
        False, True, True, False, False, False, True,
    ]  # fmt: skip
    model, src = tiny_model(VOCAB, seed=5), sources([5, 7, 6], vocab=VOCAB, seed=5)
    constraints = [[[7, 8]], [[9]], [[10, 11]]]
    plain = constrained_beam_search(model, src, BEAM, constraints, **IDS)
    after = [h.tokens[h.tokens.index(p[0][-1]) + 1 :][:1] for n, p in zip(plain, constraints) for h in n[:1]]
    continuing = torch.zeros(VOCAB, dtype=torch.bool)
    continuing[[t for tokens in after for t in tokens]] = True  # what followed each phrase now may not
    ended = constrained_beam_search(model, src, BEAM, constraints, continuing=continuing, **IDS)
    assert_met(ended, constraints)
    for nbest, phrases in zip(ended, constraints):
        tokens, phrase = nbest[0].tokens, phrases[0]
        ends = [i + len(phrase) for i in range(len(tokens)) if tokens[i : i + len(phrase)] == phrase]
        assert all(end == len(tokens) or not continuing[tokens[end]] for end in ends)


def test_a_started_word_of_a_phrase_is_finished():
    model, src = tiny_model(VOCAB, seed=6), sources([5, 7, 6, 4], vocab=VOCAB, seed=6)
    constraints = [[[10, 11, 12]], [[10, 11, 12]], [[13, 14], [5]], [[10, 11, 12]]]
    continuing = torch.zeros(VOCAB, dtype=torch.bool)
    continuing[[11, 12, 14]] = True  # "10 11 12" is one word of three pieces, "13 14" one of two
    results = constrained_beam_search(model, src, BEAM, constraints, continuing=continuing, **IDS)
    assert_met(results, constraints)
    complete = [h for nbest in results for h in nbest if h.constraints_met == h.constraints_total]
    assert len(complete) >= len(results)  # (the length limit may cut a word short in the others)
    for hypothesis in complete:
        tokens = hypothesis.tokens + [EOS]
        assert all(tokens[i + 1 : i + 3] == [11, 12] for i, t in enumerate(tokens) if t == 10), tokens
        assert all(tokens[i + 1] == 14 for i, t in enumerate(tokens) if t == 13), tokens


@pytest.fixture(scope="module")
def god_tokenizer() -> Tokenizer:
    """A BPE model with the pieces "▁god", "▁and" and "s": "gods" is "▁god s" (the corpus never has it)."""
    words = "god day days night nights land lands water waters and the".split()
    rng = random.Random(0)
    texts = [" ".join(rng.choices(words, k=rng.randint(2, 8))) for _ in range(200)]
    tokenizer = Tokenizer.train(texts, vocab_size=48, model_type="bpe")
    assert tokenizer.pieces("god and gods") == ["\u2581god", "\u2581and", "\u2581god", "s"]
    return tokenizer


def words_search(tokenizer: Tokenizer, model, phrases: list[str], options: SearchOptions, **kwargs):
    """The constrained search of one sentence with `phrases` (text), keeping them to word boundaries."""
    constraints = [[tokenizer.encode(phrase) for phrase in phrases]]
    continuing = continuing_pieces(tokenizer.pieces_of_vocabulary())
    src = sources([5], vocab=tokenizer.vocab_size)
    return constrained_beam_search(model, src, options, constraints, continuing=continuing, **IDS, **kwargs)


def has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<!\w){word}(?!\w)", text) is not None


@pytest.mark.parametrize("text", ["god and gods", "gods and god"])
def test_a_phrase_and_a_longer_word_it_starts_are_both_met_in_either_order(god_tokenizer, text):
    script = god_tokenizer.encode(text)
    model = Scripted(script, god_tokenizer.vocab_size)
    found = words_search(god_tokenizer, model, ["god", "gods"], SearchOptions(beam_size=2, max_len_b=8))
    assert found[0][0].tokens == script  # nothing in the way of the model's own choice
    assert found[0][0].constraints_met == found[0][0].constraints_total == 2


def whole_word_count(tokens: list[int], phrases: list[list[int]], continuing: torch.Tensor) -> int:
    """Phrases that occur in `tokens` followed by the end or by a piece that does not continue the word."""
    ended = [*tokens, EOS]
    return sum(
        any(ended[i : i + len(p)] == p and not continuing[ended[i + len(p)]] for i in range(len(tokens)))
        for p in phrases
    )


@pytest.mark.parametrize(("seed", "beam"), [(0, 2), (1, 2), (2, 4)])
def test_random_models_meet_god_and_gods_as_whole_words(god_tokenizer, seed, beam):
    model = tiny_model(god_tokenizer.vocab_size, seed=seed)
    options = SearchOptions(beam_size=beam, nbest=beam, max_len_a=0.0, max_len_b=16)
    found = words_search(god_tokenizer, model, ["god", "gods"], options)[0]
    text = god_tokenizer.decode(found[0].tokens)
    assert has_word(text, "god") and has_word(text, "gods"), text
    assert found[0].constraints_met == found[0].constraints_total == 2
    phrases = [god_tokenizer.encode("god"), god_tokenizer.encode("gods")]
    continuing = continuing_pieces(god_tokenizer.pieces_of_vocabulary())
    assert [h.constraints_met for h in found] == [
        whole_word_count(h.tokens, phrases, continuing) for h in found
    ]


def test_a_met_phrase_leaves_the_word_free_where_it_comes_again(god_tokenizer):
    script = god_tokenizer.encode("god and gods")  # "god" is met before "gods" starts with its piece
    model = Scripted(script, god_tokenizer.vocab_size)
    found = words_search(god_tokenizer, model, ["god"], SearchOptions(max_len_b=8))
    assert found[0][0].tokens == script and found[0][0].constraints_met == 1


def test_a_phrase_the_next_piece_glues_onto_is_not_met(god_tokenizer):
    model = Scripted(god_tokenizer.encode("gods and"), god_tokenizer.vocab_size)
    prefix = [god_tokenizer.encode("gods")]  # forced, so "god" is written and then glued onto
    found = words_search(god_tokenizer, model, ["god"], SearchOptions(max_len_b=8), prefix=prefix)
    assert found[0][0].tokens == god_tokenizer.encode("gods god")  # so "god" is written again, whole
    assert found[0][0].constraints_met == 1


def test_a_phrase_is_met_when_its_word_ends_and_voided_when_it_goes_on():
    continuing = torch.zeros(VOCAB, dtype=torch.bool)
    continuing[[6, 8]] = True  # "5" starts a word ("god"), "6" and "8" go on with it ("s"), "7" starts one
    state = ConstraintState.start([[[5], [5, 6]]], copies=1, device=CPU, continuing=continuing)
    outputs = torch.tensor([[BOS]])
    met, progress = state.after(torch.tensor([0]), torch.tensor([5]), outputs)
    assert met.tolist() == [[False, False]] and progress.tolist() == [[1, 1]]  # "god": pending
    state = ConstraintState(state.phrases, state.lengths, met, progress, continuing)
    assert state.pending().tolist() == [[True, False]] and state.may_end().tolist() == [False]
    met, _ = state.after(torch.tensor([0, 0, 0]), torch.tensor([6, 7, EOS]), torch.tensor([[BOS, 5]]))
    assert met.tolist() == [[False, False], [True, False], [True, False]]  # "gods" voids it; 7, eos meet it
    logprobs = torch.zeros(1, VOCAB)
    word_rules_(logprobs, state, torch.tensor([True]))
    assert torch.isinf(logprobs[0]).nonzero().view(-1).tolist() == [8]  # "s" for "gods", or a new word


def test_word_rules_that_leave_no_token_give_way():
    continuing = torch.zeros(VOCAB, dtype=torch.bool)
    continuing[6] = True
    model = Scripted([9, 5, 7], VOCAB)
    src = sources([4], vocab=VOCAB)
    avoid = Avoided.of([[9, 5, 6]], CPU)  # after the forced "9 5", the word of "5 6" cannot be finished
    options = SearchOptions(max_len_b=8)
    found = constrained_beam_search(
        model, src, options, [[[5, 6]]], prefix=[[9, 5]], avoid=avoid, continuing=continuing, **IDS
    )
    assert found[0][0].tokens == [9, 5, 7, 5, 6] and found[0][0].constraints_met == 1

"""Beam search against exhaustive enumeration, teacher forcing, greedy search and itself in other batches."""

from __future__ import annotations

import pytest
import torch
from decode_helpers import (
    EOS,
    IDS,
    UNK,
    Biased,
    eos_biased,
    exhaustive_ranking,
    sources,
    teacher_forced,
    tiny_model,
)

from seq2seq.decode import beam_search, greedy_search
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.penalties import length_penalty
from seq2seq.errors import UserError


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("stop_early", [True, False])
def test_large_beam_finds_the_exhaustive_best(alpha, stop_early):
    model, src = _exhaustive_case()
    ranking = exhaustive_ranking(model, src, tokens=[UNK, 4, 5, 6], max_len=4, alpha=alpha)
    nbest = beam_search(
        model,
        src,
        SearchOptions(
            beam_size=512, nbest=5, length_penalty=alpha, max_len_a=0, max_len_b=4, stop_early=stop_early
        ),
        **IDS,
    )[0]
    assert [h.tokens for h in nbest] == [tokens for _, tokens in ranking[:5]]
    assert [h.score for h in nbest] == pytest.approx([score for score, _ in ranking[:5]], abs=1e-4)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_exhaustive_best_is_neither_greedy_nor_a_small_beam(alpha):
    """Keeps the test above discriminative: the best output needs a wide search to be found."""
    model, src = _exhaustive_case()
    best = exhaustive_ranking(model, src, tokens=[UNK, 4, 5, 6], max_len=4, alpha=alpha)[0][1]
    greedy = greedy_search(model, src, SearchOptions(max_len_a=0, max_len_b=4), **IDS)[0]
    small_beam = beam_search(
        model, src, SearchOptions(beam_size=2, length_penalty=alpha, max_len_a=0, max_len_b=4), **IDS
    )
    assert best != greedy.tokens and best != small_beam[0][0].tokens and best != []


def _exhaustive_case() -> tuple[Biased, torch.Tensor]:
    """Vocabulary of 7 (4 generable tokens besides eos): 341 outputs of up to 4 tokens."""
    return eos_biased(vocab=7, eos_bias=-4.0, seed=2, sharpness=2.0), sources([5], vocab=7, seed=1)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_size_one_equals_greedy(alpha):
    model = eos_biased(eos_bias=-2.0, seed=1)
    src = sources([7, 3, 9, 5], seed=2)
    greedy = greedy_search(model, src, **IDS)
    beams = beam_search(model, src, SearchOptions(beam_size=1, length_penalty=alpha), **IDS)
    assert [b[0].tokens for b in beams] == [g.tokens for g in greedy]
    assert [b[0].log_prob for b in beams] == pytest.approx([g.score for g in greedy], abs=1e-5)
    assert any(len(g.tokens) > 2 for g in greedy)


def test_nbest_is_sorted_and_scores_are_teacher_forced_logprobs_plus_penalty():
    model = eos_biased(eos_bias=-1.0, seed=4, sharpness=3.0)
    src = sources([6, 9, 4], seed=5)
    alpha = 0.8
    results = beam_search(model, src, SearchOptions(beam_size=6, nbest=6, length_penalty=alpha), **IDS)
    for row, nbest in enumerate(results):
        assert len(nbest) == 6
        scores = [h.score for h in nbest]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in nbest}) == 6
        forced = teacher_forced(model, src[row : row + 1], [h.tokens for h in nbest])
        for hyp, positional in zip(nbest, forced):
            assert hyp.positional_scores == pytest.approx(positional, abs=1e-4)
            assert hyp.log_prob == pytest.approx(sum(positional), abs=1e-4)
            assert hyp.score == pytest.approx(
                sum(positional) / length_penalty(len(hyp.tokens) + 1, alpha), abs=1e-4
            )


@pytest.mark.parametrize("stop_early", [True, False])
def test_output_does_not_depend_on_the_rest_of_the_batch(stop_early):
    model = eos_biased(eos_bias=-1.5, seed=6)
    src = sources([3, 11, 6, 8, 2], seed=7)
    together = beam_search(model, src, SearchOptions(beam_size=4, nbest=2, stop_early=stop_early), **IDS)
    for row in range(src.shape[0]):
        length = int((src[row] != 0).sum())
        alone = beam_search(
            model,
            src[row : row + 1, :length],
            SearchOptions(beam_size=4, nbest=2, stop_early=stop_early),
            **IDS,
        )
        assert [h.tokens for h in alone[0]] == [h.tokens for h in together[row]]
        assert [h.score for h in alone[0]] == pytest.approx([h.score for h in together[row]], abs=1e-4)


def test_no_repeat_ngram_blocks_repeats():
    model = eos_biased(eos_bias=-4.0, seed=8, sharpness=8.0)
    src = sources([8, 5], seed=9)

    def has_repeat(tokens: list[int], n: int) -> bool:
        grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        return len(grams) != len(set(grams))

    free = beam_search(model, src, SearchOptions(beam_size=4, nbest=4), **IDS)
    assert any(has_repeat(h.tokens, 2) for nbest in free for h in nbest)  # the model does repeat
    for n in (1, 2, 3):
        blocked = beam_search(model, src, SearchOptions(beam_size=4, nbest=4, no_repeat_ngram_size=n), **IDS)
        assert not any(has_repeat(h.tokens, n) for nbest in blocked for h in nbest)


def test_min_len_prevents_early_eos_and_max_len_is_respected():
    src = sources([4, 9, 6], seed=10)
    talkative = eos_biased(eos_bias=-30.0, seed=11)
    limits = [int(1.5 * n + 2) for n in (4, 9, 6)]
    out = beam_search(talkative, src, SearchOptions(beam_size=3, nbest=3, max_len_a=1.5, max_len_b=2), **IDS)
    assert [[len(h.tokens) for h in nbest] for nbest in out] == [[n] * 3 for n in limits]
    terse = eos_biased(eos_bias=30.0, seed=11)
    assert all(h.tokens == [] for h in beam_search(terse, src, SearchOptions(beam_size=3), **IDS)[0])
    out = beam_search(terse, src, SearchOptions(beam_size=3, nbest=3, min_len=3), **IDS)
    assert all(len(h.tokens) == 3 for nbest in out for h in nbest)
    assert all(EOS not in h.tokens for nbest in out for h in nbest)


def test_forced_prefixes_of_different_lengths():
    model = eos_biased(eos_bias=-2.0, seed=12)
    src = sources([5, 7, 4], seed=13)
    prefixes = [[9, 9, 4], [], [11]]
    out = beam_search(model, src, SearchOptions(beam_size=3, nbest=3), prefix=prefixes, **IDS)
    for row, (prefix, nbest) in enumerate(zip(prefixes, out)):
        assert all(h.tokens[: len(prefix)] == prefix for h in nbest)
        forced = teacher_forced(model, src[row : row + 1], [h.tokens for h in nbest])
        assert [h.log_prob for h in nbest] == pytest.approx([sum(lp) for lp in forced], abs=1e-4)
    assert [h.tokens for h in out[1]] == [
        h.tokens for h in beam_search(model, src[1:2], SearchOptions(beam_size=3, nbest=3), **IDS)[0]
    ]
    shared = beam_search(model, src, SearchOptions(beam_size=2), prefix=[10], **IDS)
    assert all(nbest[0].tokens[:1] == [10] for nbest in shared)


def test_finished_sentences_leave_the_batch():
    model = eos_biased(eos_bias=-30.0, seed=14)
    src = sources([2, 12], seed=15)  # limits 1 * 2 + 1 = 3 and 13 output tokens
    beam_search(model, src, SearchOptions(beam_size=4, max_len_a=1.0, max_len_b=1), **IDS)
    assert model.rows_per_step[:4] == [8, 8, 8, 8]  # step 3 forces eos for sentence 0
    assert set(model.rows_per_step[4:]) == {4}
    assert len(model.rows_per_step) == 14


def test_bad_arguments_are_user_errors():
    model = tiny_model()
    src = sources([3])
    with pytest.raises(UserError, match="nbest"):
        beam_search(model, src, SearchOptions(beam_size=2, nbest=3))
    with pytest.raises(UserError, match="LongTensor"):
        beam_search(model, src.float(), SearchOptions(beam_size=5))


def test_empty_batch_and_torch_state_untouched():
    model = tiny_model()
    assert beam_search(model, sources([3])[:0], SearchOptions(beam_size=5), **IDS) == []
    assert torch.is_grad_enabled()


def test_beams_stay_in_their_parents_rows(monkeypatch):
    """Each step's cache reorder moves only the rows it must: per sentence, K minus the number of
    beams that have a child (the best child of each parent keeps the parent's row)."""
    from seq2seq.nn.kv_cache import DecoderState

    indexes = []
    reorder = DecoderState.reorder

    def spy(self, index, *, memory=True):
        indexes.append((index.clone(), memory))
        return reorder(self, index, memory=memory)

    monkeypatch.setattr(DecoderState, "reorder", spy)
    beam = 4
    model = eos_biased(vocab=20, eos_bias=-30.0, seed=3, sharpness=1.0)
    src = sources([5, 7, 6], vocab=20, seed=4)
    beam_search(model, src, SearchOptions(beam_size=beam, max_len_a=1.0, max_len_b=2), **IDS)
    checked = 0
    for index, memory in indexes:
        if memory is not False:  # a sentence finished: rows are dropped, not only permuted
            continue
        for start in range(0, index.numel(), beam):
            parents = index[start : start + beam]
            own_rows = torch.arange(start, start + beam)
            assert int((parents != own_rows).sum()) == beam - parents.unique().numel()
            checked += 1
    assert checked > 10


def test_parent_slots_first_against_brute_force():
    from seq2seq.decode.beam import _parent_slots_first

    gen = torch.Generator().manual_seed(0)
    parents = torch.randint(0, 5, (200, 5), generator=gen)  # (B, K) parent slot of each ranked beam
    order = _parent_slots_first(parents)
    assert torch.equal(order.sort(dim=1).values, torch.arange(5).expand(200, 5))  # a permutation
    for row, ranks in zip(parents.tolist(), order.tolist()):
        slot_parents = [row[rank] for rank in ranks]
        best_child = {parent: row.index(parent) for parent in set(row)}  # first-ranked child
        for parent, rank in best_child.items():
            assert ranks[parent] == rank  # keeps its parent's slot
        assert sum(p != slot for slot, p in enumerate(slot_parents)) == 5 - len(best_child)
        extras = [rank for rank in range(5) if rank not in best_child.values()]
        free = [slot for slot in range(5) if slot not in best_child]
        assert [ranks[slot] for slot in free] == extras  # the rest fill childless slots in rank order


@pytest.mark.parametrize(
    ("vocab", "k"), [(7, 1), (7, 2), (100, 10), (64 * 21, 10), (64 * 21, 1), (8000, 10), (8003, 10)]
)
def test_row_topk_equals_torch_topk(vocab, k):
    from seq2seq.decode.beam import _row_topk

    gen = torch.Generator().manual_seed(vocab + k)
    values = torch.randn(33, vocab, generator=gen)
    values[:, ::3] = float("-inf")  # masked tokens, as the search's constraints make them
    expected = values.topk(k, dim=1)
    top_values, columns = _row_topk(values, k)
    assert torch.equal(top_values, expected.values)
    assert torch.equal(values.gather(1, columns), top_values)
    assert torch.equal(columns, expected.indices)  # distinct finite values: the same columns


@pytest.mark.skipif(not torch.cuda.is_available(), reason="runs the CUDA path; needs a CUDA device")
@pytest.mark.parametrize("beam_size", [1, 4])
def test_search_on_cuda_finds_the_cpu_hypotheses(beam_size):
    """The same model and sources on the GPU (its KV cache, masks and finished-beam bookkeeping there)
    give the CPU's hypotheses, and their scores to float32 rounding."""
    model, src = tiny_model(vocab=24, seed=5), sources([3, 7, 5, 9, 2, 6], vocab=24, seed=4)
    options = SearchOptions(
        beam_size=beam_size, nbest=beam_size, length_penalty=1.0, max_len_a=1.5, max_len_b=3
    )
    on_cpu = beam_search(model, src, options, **IDS)
    on_gpu = beam_search(model.to("cuda"), src.to("cuda"), options, **IDS)
    assert [[h.tokens for h in row] for row in on_gpu] == [[h.tokens for h in row] for row in on_cpu]
    for gpu_row, cpu_row in zip(on_gpu, on_cpu):
        assert [h.score for h in gpu_row] == pytest.approx([h.score for h in cpu_row], abs=1e-4)

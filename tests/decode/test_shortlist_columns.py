"""Greedy and beam search over a compact shortlist projection's candidate columns
(seq2seq.decode.step_rules.in_columns) find what the same search finds at the whole vocabulary's width,
where every token outside the candidates is -inf: the same tokens, the same scores (to rounding: the
normalising sums run over fewer terms), with forced prefixes, n-gram blocking, avoided phrases and
min_len, for one model, an ensemble and a decoder-only model."""

from __future__ import annotations

import pytest
import torch
from tiny_models import flat_model

from seq2seq.decode.constraints import Avoided
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import pad_batch, search
from seq2seq.decode.shortlist import restricted
from seq2seq.decode.step_rules import to_columns

VOCAB, IDS = 60, SpecialIds(bos=2, eos=3, pad=0)
SOURCES = [[7, 9, 12, 3], [20, 21, 3], [30, 33, 35, 38, 3]]


def sentence_candidates(prefixes: list[list[int]]) -> torch.Tensor:
    """Each sentence its own random third of the vocabulary, plus unk, eos and its prefix. Shapes: (B, V)."""
    keep = torch.rand(len(SOURCES), VOCAB, generator=torch.Generator().manual_seed(4)) < 0.35
    keep[:, [0, 2]] = False  # pad and bos: never candidates
    keep[:, 30:36] = False  # no sentence's: every column after them is another token
    keep[:, [1, 3]] = True
    for row, prefix in enumerate(prefixes):
        keep[row, prefix] = True
    return keep


CASES = {
    "plain": ({}, []),
    "min_len and n-gram blocking": ({"min_len": 3, "no_repeat_ngram_size": 1}, []),
    "forced prefixes": ({}, [[44, 45], [], [52]]),
}


@pytest.mark.parametrize("kind", ["single", "ensemble", "decoder_only"])
@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_searching_the_candidate_columns_equals_searching_the_whole_vocabulary(kind, beam, case) -> None:
    model, (settings, prefixes) = flat_model(kind, VOCAB), CASES[case]
    options = SearchOptions(beam_size=beam, nbest=beam, max_len_a=0.0, max_len_b=8, **settings)
    keep = sentence_candidates(prefixes)
    allowed = [token for token in keep[0].nonzero().squeeze(1).tolist() if token not in (44, 45, 52)]
    avoid = Avoided.of([[allowed[4]], [allowed[5], allowed[6]], [1, 4, 59]], torch.device("cpu"))
    found = {}
    for compact in (False, True):
        with restricted(model, keep, specials=(0, 2, 3), compact=compact):
            found[compact] = search(model, pad_batch(SOURCES, 0), options, prefix=prefixes or None, ids=IDS,
                                    avoid=avoid)  # fmt: skip
    assert [[h.tokens for h in nbest] for nbest in found[True]] == [
        [h.tokens for h in nbest] for nbest in found[False]
    ]
    for compact_nbest, full_nbest in zip(found[True], found[False]):
        for ours, theirs in zip(compact_nbest, full_nbest):
            assert ours.score == pytest.approx(theirs.score, abs=1e-5)
            assert ours.positional_scores == pytest.approx(theirs.positional_scores, abs=1e-5)
    for row, nbest in enumerate(found[True]):
        assert all(keep[row, token] for hypothesis in nbest for token in hypothesis.tokens)


def test_avoided_phrases_become_columns_and_impossible_ones_are_left_out() -> None:
    columns = torch.tensor([1, 3, 5, 8, 13])
    avoid = Avoided.of([[5], [8, 13], [5, 7], [2, 13]], torch.device("cpu"))
    mapped = avoid.in_columns(columns)
    assert mapped.last.tolist() == [2, 4]  # 5 and 13; [5, 7] and [2, 13] cannot be written here
    assert mapped.context[:, -1].tolist()[1] == 3  # 8
    assert Avoided.of([[7]], torch.device("cpu")).in_columns(columns) is None
    assert to_columns(torch.tensor([[13, 1], [3, 3]]), columns).tolist() == [[4, 0], [1, 1]]
    with pytest.raises(ValueError, match="not among the shortlist's candidate columns"):
        to_columns(torch.tensor([7]), columns)

"""A search's `stop` check: asked before each batch and at every decoding step, it ends greedy search,
beam search, constrained beam search and sampling with SearchStopped at the step it first says True;
while it says False the results are those of a search without it."""

from __future__ import annotations

import pytest
import torch
from decode_helpers import IDS, eos_biased, sources

from seq2seq.decode.hypotheses import SearchStopped
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import search_ids

SEARCHES = {
    "greedy": SearchOptions(max_len_a=0.0, max_len_b=20),
    "beam": SearchOptions(beam_size=3, nbest=2, max_len_a=0.0, max_len_b=20),
    "sampling": SearchOptions(sampling=True, nbest=2, max_len_a=0.0, max_len_b=20),
    "constrained": SearchOptions(beam_size=3, nbest=2, max_len_a=0.0, max_len_b=20),
}
# the constrained search: each sentence must contain a phrase (token ids of the test model's vocabulary)
PHRASES = {"constrained": {"constraints": [[[6, 7]], [[9]], [[8, 6]]]}}


def sentences() -> list[list[int]]:
    return [row[row != 0].tolist() for row in sources([5, 7, 4])]


@pytest.mark.parametrize("name", SEARCHES)
def test_a_stop_check_ends_the_search_at_the_step_it_says_true(name):
    model = eos_biased(eos_bias=-50.0)  # no output ends before its 20 tokens
    checks: list[int] = []

    def stop() -> bool:  # True from its 4th question on: before the batch, then steps 1, 2 and 3
        checks.append(1)
        return len(checks) >= 4

    with pytest.raises(SearchStopped):
        search_ids(
            model, sentences(), options=SEARCHES[name], device=torch.device("cpu"), stop=stop,
            **PHRASES.get(name, {}), **IDS,
        )  # fmt: skip
    assert len(model.rows_per_step) == 3 and len(checks) == 4


@pytest.mark.parametrize("name", SEARCHES)
def test_a_stop_check_that_never_says_true_changes_nothing(name):
    model = eos_biased(eos_bias=-2.0)
    cpu = torch.device("cpu")
    phrases = PHRASES.get(name, {})
    plain = search_ids(model, sentences(), options=SEARCHES[name], device=cpu, **phrases, **IDS)
    asked = search_ids(
        model, sentences(), options=SEARCHES[name], device=cpu, stop=lambda: False, **phrases, **IDS
    )
    assert [[(h.tokens, h.score) for h in nbest] for nbest in asked] == [
        [(h.tokens, h.score) for h in nbest] for nbest in plain
    ]

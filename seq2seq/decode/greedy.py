"""Greedy search, and the single-path decoding loop it shares with sampling.

Every row follows one path: the loop asks `choose` for the next token of each row, keeps the
KV cache, and drops finished rows from the batch once a quarter of them are done (dropping copies
the cache, so doing it for every single finished row would cost more than it saves). The host
learns one number per step: how many rows are finished.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from seq2seq.decode.constraints import Avoided
from seq2seq.decode.hypotheses import (
    SPECIAL_IDS,
    Hypothesis,
    Prefix,
    SpecialIds,
    StopCheck,
    finished_hypothesis,
)
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.searchable import SearchableModel
from seq2seq.decode.step_rules import next_token_scores, start_search

# Next-token log-probabilities (N, V), already constrained -> chosen tokens (N,).
Chooser = Callable[[Tensor], Tensor]
GREEDY = SearchOptions()


def greedy_search(
    model: SearchableModel,
    src: Tensor,
    options: SearchOptions = GREEDY,
    *,
    prefix: Prefix = None,
    ids: SpecialIds = SPECIAL_IDS,
    avoid: Avoided | None = None,
    stop: StopCheck | None = None,
) -> list[Hypothesis]:
    """The most likely next token at every step, for a batch of right-padded sources.

    Uses the length rules of `options` (beam size, length penalty and sampling settings do not apply).
    `stop`: asked at every step; True ends the search with SearchStopped (seq2seq.decode.hypotheses).
    Shapes: src (B, S) -> B hypotheses; score = log_prob (no length penalty).
    """
    paths = decode_paths(
        model,
        src,
        options,
        choose=lambda logprobs: logprobs.argmax(dim=-1),
        copies=1,
        prefix=prefix,
        ids=ids,
        avoid=avoid,
        stop=stop,
    )
    return [sentence[0] for sentence in paths]


@torch.inference_mode()
def decode_paths(
    model: SearchableModel,
    src: Tensor,
    options: SearchOptions,
    *,
    choose: Chooser,
    copies: int,
    prefix: Prefix,
    ids: SpecialIds,
    avoid: Avoided | None = None,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """Decode `copies` independent paths per sentence; returns B lists of `copies` hypotheses."""
    rules, state = start_search(
        model, src, options, copies=copies, prefix=prefix, ids=ids, avoid=avoid, stop=stop
    )
    ready = model.returns_log_probs  # an Ensemble scores the step itself
    own = rules.ids  # the search's ids: column indices under a compact shortlist (StepRules.columns)
    total = src.shape[0] * copies
    rows = torch.arange(total, device=src.device)  # original row of each current row
    tokens = torch.full((total, 1), own.bos, dtype=torch.long, device=src.device)  # (N, 1 + step)
    positional_scores = torch.zeros(total, 0, device=src.device)  # (N, step) chosen tokens' log-probs
    finished = torch.zeros(total, dtype=torch.bool, device=src.device)
    results: list[Hypothesis | None] = [None] * total
    while rows.numel():
        logits, state = model.decode_step(rules.model_tokens(tokens[:, -1:]), state)  # (N, V)
        logprobs = next_token_scores(logits, tokens, rules, log_probs=ready)
        choice = choose(logprobs).masked_fill(finished, own.pad)  # (N,)
        chosen = logprobs.gather(1, choice[:, None]).squeeze(1).masked_fill(finished, 0.0)  # (N,)
        finished |= choice == own.eos
        tokens = torch.cat([tokens, choice[:, None]], dim=1)
        positional_scores = torch.cat([positional_scores, chosen[:, None]], dim=1)
        done = int(finished.sum())  # the one host sync of the step
        if done and 4 * done >= rows.numel():
            _collect(results, rows, rules.model_tokens(tokens), positional_scores, finished, ids.eos)
            keep = (~finished).nonzero().squeeze(1)  # (N',)
            if keep.numel():
                state.reorder(keep)
            rows, tokens, positional_scores = rows[keep], tokens[keep], positional_scores[keep]
            finished, rules = finished[keep], rules.select(keep)
    return [results[b * copies : (b + 1) * copies] for b in range(src.shape[0])]  # type: ignore[misc]


def _collect(
    results: list, rows: Tensor, tokens: Tensor, positional_scores: Tensor, finished: Tensor, eos_id: int
) -> None:
    """Store the finished rows' hypotheses (tokens up to eos; log-probs up to and including it)."""
    index = finished.nonzero().squeeze(1)
    ids, outputs = rows[index].tolist(), tokens[index, 1:].tolist()
    logprobs = positional_scores[index].tolist()
    for row, output, scores in zip(ids, outputs, logprobs):
        end = output.index(eos_id)
        results[row] = finished_hypothesis(output[:end], scores[: end + 1], 0.0)


__all__ = ["Chooser", "decode_paths", "greedy_search"]

"""Constrained beam search: every output contains its sentence's target phrases (dynamic beam allocation).

Post & Vilar (2018), vectorised over the batch like Hu et al. (2019). Per step, for B sentences and K
beams (N = B * K rows), with seq2seq.decode.constraints tracking each row's progress on its phrases:
  1. the step's constrained log-probabilities (N, V), as in beam search, and eos held back for rows
     that still have an unmet phrase (unless they reached their length limit);
  2. candidates per sentence: the usual best 2K expansions, every row's best token, and every row's
     next token of each unmet phrase; a (beam, token) pair listed twice counts once;
  3. each candidate's bank (constraint tokens met after it); the beam is filled rank by rank across
     banks, the highest bank first (`allocation_order`), so hypotheses that have met more constraints
     keep their place beside better-scoring ones that have met fewer;
  4. from there as beam search: eos candidates among the first K finish, the first K others are the
     new beams, the KV cache and the constraint progress follow them.
A sentence is done as in beam search (module seq2seq.decode.beam). As eos waits for every phrase (met,
or pending: eos ends the word and meets it), its finished hypotheses meet them all, except those cut at
the length limit; the n-best list ranks by phrases met first, then score, and each hypothesis carries
`constraints_met` and `constraints_total`.
A sentence with no phrases is searched exactly as beam search would (a test holds the two equal).
Greedy search with constraints is this search with beam size 1: the best candidate of the highest
bank wins, so each phrase is placed as soon as it can be.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from seq2seq.decode.beam import (
    _advance,
    _Beams,
    _Candidates,
    _done,
    _finish,
    _initial_beams,
    _split,
    _top_candidates,
    check_beam,
)
from seq2seq.decode.constraints import (
    PAD,
    Avoided,
    ConstraintState,
    allocation_order,
    hold_eos_,
    word_rules_,
)
from seq2seq.decode.hypotheses import SPECIAL_IDS, Hypothesis, Prefix, SpecialIds, StopCheck
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.penalties import NEG_INF
from seq2seq.decode.searchable import SearchableModel, SearchState
from seq2seq.decode.step_rules import StepRules, next_token_scores, start_search
from seq2seq.errors import UserError

Phrases = Sequence[Sequence[Sequence[int]]]  # per sentence, its phrases as target token ids


@torch.inference_mode()
def constrained_beam_search(
    model: SearchableModel,
    src: Tensor,
    options: SearchOptions,
    constraints: Phrases,
    *,
    prefix: Prefix = None,
    ids: SpecialIds = SPECIAL_IDS,
    avoid: Avoided | None = None,
    continuing: Tensor | None = None,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """The `options.nbest` best hypotheses per sentence that contain its phrases (module docstring).

    `constraints`: one list of phrases per sentence (each a list of target ids; [] for none). A forced
    prefix counts towards them. `continuing` (V,) bool: the target pieces that continue a word
    (seq2seq.decode.constraints.continuing_pieces); with them a phrase counts only on word boundaries.
    `stop`: asked at every step; True ends the search with SearchStopped (seq2seq.decode.hypotheses).
    Shapes: src (B, S) right-padded with pad_id -> B lists of hypotheses.
    """
    beam_size, nbest = check_beam(options)
    check_constraints(constraints, batch=src.shape[0], beam_size=beam_size, ids=ids)
    rules, state = start_search(
        model, src, options, copies=beam_size, prefix=prefix, ids=ids, avoid=avoid, stop=stop
    )
    ready = model.returns_log_probs  # an Ensemble scores the step itself
    limits = rules.max_lens[::beam_size].tolist()  # per sentence, on the host
    beams = _initial_beams(src.shape[0], beam_size, rules, device=src.device)
    if continuing is not None:
        continuing = continuing.to(src.device).clone()
        continuing[ids.eos] = False  # eos ends the word: it meets a pending phrase
    wanted = ConstraintState.start(constraints, copies=beam_size, device=src.device, continuing=continuing)
    totals = wanted.totals()
    finished: list[list[Hypothesis]] = [[] for _ in range(src.shape[0])]
    while beams.sentences:
        logits, state = model.decode_step(beams.tokens[:, -1:], state)  # (N, V)
        logprobs = next_token_scores(logits, beams.tokens, beams.rules, log_probs=ready)
        step = beams.tokens.shape[1] - 1
        at_limit = beams.rules.max_lens <= step  # (N,)
        hold_eos_(logprobs, wanted.may_end() | at_limit, eos_id=ids.eos)
        if continuing is not None:
            word_rules_(logprobs, wanted, ~at_limit & ~_forced_now(beams.rules, step))
        wanted = _step(
            beams, state, logprobs, wanted, finished, limits=limits, totals=totals, options=options
        )
    return [
        sorted(hyps, key=lambda h: (h.constraints_met, h.score), reverse=True)[:nbest] for hyps in finished
    ]


def _forced_now(rules: StepRules, step: int) -> Tensor:
    """Rows whose next token a forced prefix sets. Shapes: -> (N,) bool."""
    if rules.prefix is None or step >= rules.prefix.shape[1]:
        return torch.zeros_like(rules.max_lens, dtype=torch.bool)
    return rules.prefix[:, step] != rules.ids.pad


def check_constraints(constraints: Phrases, *, batch: int, beam_size: int, ids: SpecialIds) -> None:
    """One list of phrases per sentence, no more phrases than beams, no empty phrase, no special ids."""
    if len(constraints) != batch:
        raise UserError(f"got constraints for {len(constraints)} sentences, not {batch}; pass one list each")
    specials = {ids.pad, ids.bos, ids.eos}
    for number, phrases in enumerate(constraints, start=1):
        unique = {tuple(phrase) for phrase in phrases}
        if len(unique) > beam_size:
            raise UserError(
                f"sentence {number} has {len(unique)} constraint phrases, more than the beam of {beam_size} "
                "can hold; raise beam_size or give fewer phrases"
            )
        for phrase in phrases:
            if not phrase or specials & set(phrase):
                raise UserError(
                    f"sentence {number} has a constraint phrase {list(phrase)} that is empty or holds pad, "
                    f"bos or eos (ids {ids.pad}, {ids.bos}, {ids.eos}); give each phrase's target tokens"
                )


def _step(
    beams: _Beams,
    state: SearchState,
    logprobs: Tensor,
    wanted: ConstraintState,
    finished: list[list[Hypothesis]],
    *,
    limits: list[int],
    totals: list[int],
    options: SearchOptions,
) -> ConstraintState:
    """Steps 2-4 of the module docstring; returns the constraint state of the new beams."""
    step = beams.tokens.shape[1] - 1
    batch, beam_size = beams.scores.shape
    exact, alpha = not options.stop_early, options.length_penalty
    candidates = _candidates(logprobs, beams.scores, wanted)  # (B, M)
    width = candidates.scores.shape[1]
    parents = torch.arange(batch, device=logprobs.device)[:, None] * beam_size + candidates.beams  # (B, M)
    met, progress = wanted.after(parents.reshape(-1), candidates.tokens.reshape(-1), beams.tokens)
    banks = wanted.banks(parents.reshape(-1), met, progress).view(batch, width)  # (B, M)
    order = allocation_order(candidates.scores, banks, wanted.top_bank())  # (B, M)
    candidates = _Candidates(*(values.gather(1, order) for values in vars(candidates).values()))
    phrases_met = met.view(batch, width, -1).sum(dim=2).gather(1, order)  # (B, M)
    met, progress = (_gather_rows(values.view(batch, width, -1), order) for values in (met, progress))
    picks, report = _split(candidates, beams.rules, beam_size=beam_size, step=step, alpha=alpha, exact=exact)
    absent = (wanted.lengths == 0).sum(dim=1, keepdim=True)  # padding phrases count as met
    report = torch.cat([report[:, :-1], (phrases_met[:, :beam_size] - absent).float(), report[:, -1:]], dim=1)
    rows = report.tolist()  # the step's one required host sync
    _finish(finished, beams, rows, alpha=alpha, totals=totals)
    done = _done(finished, beams, rows, step=step, limits=limits, options=options)
    placed, alive = _advance(beams, state, candidates, picks, done)
    chosen = [_gather_rows(values, placed).reshape(batch * beam_size, -1) for values in (met, progress)]
    return wanted.moved(*chosen, alive)


def _gather_rows(values: Tensor, order: Tensor) -> Tensor:
    """values[b, order[b, m]] for every b, m. Shapes: values (B, M, C), order (B, M') -> (B, M', C)."""
    return values.gather(1, order[:, :, None].expand(-1, -1, values.shape[2]))


def _candidates(logprobs: Tensor, scores: Tensor, wanted: ConstraintState) -> _Candidates:
    """Step 2: the best 2K expansions, every row's best token and every row's next constraint token.

    Repeats of a (beam, token) pair and impossible expansions get a score of -inf.
    Shapes: logprobs (N, V), scores (B, K) -> (B, 2K + K * (1 + C)) each.
    """
    batch, beam_size = scores.shape
    best = _top_candidates(logprobs, scores)  # (B, 2K)
    top_logprobs, top_tokens = logprobs.max(dim=1)  # (N,)
    wanted_tokens = wanted.next_tokens()  # (N, C)
    wanted_logprobs = logprobs.gather(1, wanted_tokens.clamp(min=0)).masked_fill(
        wanted_tokens == PAD, NEG_INF
    )
    tokens = torch.cat([top_tokens[:, None], wanted_tokens.clamp(min=0)], dim=1)  # (N, 1 + C)
    token_logprobs = torch.cat([top_logprobs[:, None], wanted_logprobs], dim=1)  # (N, 1 + C)
    beam_of_row = torch.arange(beam_size, device=scores.device).repeat(batch)[:, None]  # (N, 1)
    extra = _Candidates(
        (scores.view(-1, 1) + token_logprobs).view(batch, -1),
        beam_of_row.expand_as(tokens).reshape(batch, -1),
        tokens.view(batch, -1),
        token_logprobs.view(batch, -1),
    )
    joined = _Candidates(
        *(torch.cat([a, b], dim=1) for a, b in zip(vars(best).values(), vars(extra).values()))
    )
    key = joined.beams * logprobs.shape[1] + joined.tokens  # (B, M)
    sorted_keys, order = key.sort(dim=1, stable=True)
    repeated = torch.zeros_like(sorted_keys, dtype=torch.bool)
    repeated[:, 1:] = sorted_keys[:, 1:] == sorted_keys[:, :-1]
    joined.scores.masked_fill_(torch.zeros_like(repeated).scatter_(1, order, repeated), NEG_INF)
    return joined


__all__ = ["check_constraints", "constrained_beam_search"]

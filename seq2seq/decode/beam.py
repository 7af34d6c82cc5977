"""Batched beam search: every sentence of the batch advances K beams in the same tensor ops.

One step, for B sentences still being decoded (N = B * K rows):
  1. next-token log-probabilities (N, V), constrained (length limits, n-gram blocking, prefixes);
  2. candidates = beam score + token log-prob, viewed (B, K * V); keep the best 2K per sentence;
  3. eos candidates ranked in the top K finish a hypothesis; the best K non-eos candidates become
     the new beams (2K candidates always hold at least K non-eos ones: each beam has one eos);
  4. reorder the KV cache to the surviving beams and, in the same `reorder`, drop sentences that
     are done, so long batches stop paying for finished sentences. The best child of each beam
     keeps its parent's row, so most cache rows stay where they are (see KVCache.reorder).
The host receives one small (B, 3K + 1) tensor per step, plus the finished rows' tokens on steps
where some hypothesis ends. Under a compact shortlist V is the batch's C candidate columns, and tokens
are column indices until a hypothesis is recorded (StepRules.model_tokens).

When is a sentence done (`stop_early`)?
  * True (fairseq's rule, the default): once it has K finished hypotheses. Beam size 1 then equals
    greedy search exactly.
  * False (exact with respect to the beam): once no live beam can still beat its nbest-th finished
    hypothesis. Log-probabilities only decrease, so a beam with sum s can at best end with
    s / penalty(L) for some length L up to the limit; the result is the same as running every beam
    to the length limit. Slower with length_penalty > 0, where long outputs keep hope alive.
Either way a sentence is done when it reaches its length limit or has no live beam left.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from seq2seq.decode.penalties import NEG_INF, length_penalty
from seq2seq.decode.searchable import SearchableModel, SearchState
from seq2seq.decode.step_rules import StepRules, next_token_scores, start_search
from seq2seq.errors import UserError


@dataclass
class _Beams:
    """The live beams of the sentences still being decoded (B of them, K beams each)."""

    sentences: list[int]  # original index of each current sentence
    tokens: Tensor  # (B * K, 1 + step): bos and the output so far
    positional_scores: Tensor  # (B * K, step): each output token's log-probability
    scores: Tensor  # (B, K): summed log-probabilities
    rules: StepRules


@dataclass
class _Candidates:
    """The best 2K expansions per sentence, best first. All (B, 2K)."""

    scores: Tensor
    beams: Tensor
    tokens: Tensor
    logprobs: Tensor


@torch.inference_mode()
def beam_search(
    model: SearchableModel,
    src: Tensor,
    options: SearchOptions,
    *,
    prefix: Prefix = None,
    ids: SpecialIds = SPECIAL_IDS,
    all_finished: bool = False,
    avoid: Avoided | None = None,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """The `options.nbest` best hypotheses per sentence, best first (score = log_prob / GNMT penalty).

    `options.length_penalty` is the GNMT alpha (0 = rank by summed log-probability); `options.stop_early`
    chooses when a sentence is done (module docstring). `prefix` forces the first output tokens: one
    shared list, one list per sentence (lengths may differ), or a (B, P) tensor right-padded with pad_id;
    forced tokens count in the output, score and length. `all_finished`: every finished hypothesis, not
    only `nbest`; with `stop_early` which ones finish does not depend on the length penalty, so
    re-ranking them under another penalty gives exactly that penalty's search result. `avoid`: phrases
    no output may contain (seq2seq.decode.constraints). `stop`: asked at every step; True ends the
    search with SearchStopped (seq2seq.decode.hypotheses).
    Shapes: src (B, S) right-padded with pad_id -> B lists of `nbest` hypotheses.
    """
    beam_size, nbest = check_beam(options)
    rules, state = start_search(
        model, src, options, copies=beam_size, prefix=prefix, ids=ids, avoid=avoid, stop=stop
    )
    ready = model.returns_log_probs  # an Ensemble scores the step itself
    limits = rules.max_lens[::beam_size].tolist()  # per sentence, on the host
    beams = _initial_beams(src.shape[0], beam_size, rules, device=src.device)
    finished: list[list[Hypothesis]] = [[] for _ in range(src.shape[0])]
    while beams.sentences:
        logits, state = model.decode_step(beams.rules.model_tokens(beams.tokens[:, -1:]), state)  # (N, V)
        logprobs = next_token_scores(logits, beams.tokens, beams.rules, log_probs=ready)
        _step(beams, state, logprobs, finished, limits=limits, options=options)
    kept = None if all_finished else nbest
    return [sorted(hyps, key=lambda h: h.score, reverse=True)[:kept] for hyps in finished]


def check_beam(options: SearchOptions) -> tuple[int, int]:
    """(beam_size, nbest), when they make sense."""
    beam_size, nbest = options.beam_size, options.nbest
    if beam_size < 1 or not 1 <= nbest <= beam_size:
        raise UserError(f"beam_size={beam_size}, nbest={nbest}: need 1 <= nbest <= beam_size")
    return beam_size, nbest


def _initial_beams(batch: int, beam_size: int, rules: StepRules, *, device: torch.device) -> _Beams:
    """K identical beams per sentence holding only bos; only the first is expanded at the first step."""
    scores = torch.full((batch, beam_size), NEG_INF, device=device)  # (B, K)
    scores[:, 0] = 0.0
    tokens = torch.full((batch * beam_size, 1), rules.ids.bos, dtype=torch.long, device=device)  # (B*K, 1)
    return _Beams(list(range(batch)), tokens, torch.zeros(batch * beam_size, 0, device=device), scores, rules)


def _step(
    beams: _Beams,
    state: SearchState,
    logprobs: Tensor,
    finished: list[list[Hypothesis]],
    *,
    limits: list[int],
    options: SearchOptions,
) -> None:
    """Steps 2-4 of the module docstring, given the step's constrained log-probabilities (B*K, V)."""
    step = beams.tokens.shape[1] - 1
    exact, alpha = not options.stop_early, options.length_penalty
    candidates = _top_candidates(logprobs, beams.scores)
    picks, report = _split(
        candidates, beams.rules, beam_size=options.beam_size, step=step, alpha=alpha, exact=exact
    )
    rows = report.tolist()  # the step's one required host sync; plain floats from here on
    _finish(finished, beams, rows, alpha=alpha)
    done = _done(finished, beams, rows, step=step, limits=limits, options=options)
    _advance(beams, state, candidates, picks, done)


def _top_candidates(logprobs: Tensor, scores: Tensor) -> _Candidates:
    """Best 2K (beam, token) expansions per sentence. Shapes: logprobs (B*K, V), scores (B, K).

    Adding a beam's score does not reorder that beam's tokens, so a sentence's best 2K expansions are
    among each beam's best 2K tokens: ranking (B*K, 2K) sums instead of (B, K*V) ones saves building
    a (B, K*V) tensor every step.
    """
    batch, beam_size = scores.shape
    width = min(2 * beam_size, beam_size * logprobs.shape[1])
    per_beam = min(width, logprobs.shape[1])
    beam_logprobs, beam_tokens = _row_topk(logprobs, per_beam)  # (B*K, w)
    totals = (scores.view(-1, 1) + beam_logprobs).view(batch, beam_size * per_beam)  # (B, K*w)
    top_scores, top_index = totals.topk(width, dim=1)  # (B, 2K)
    return _Candidates(
        top_scores,
        top_index // per_beam,
        beam_tokens.view(batch, -1).gather(1, top_index),
        beam_logprobs.view(batch, -1).gather(1, top_index),
    )


def _row_topk(values: Tensor, k: int, *, block: int = 64) -> tuple[Tensor, Tensor]:
    """The k largest values of each row and their columns, best first, like values.topk(k, dim=1).

    A row's k largest values lie in the k blocks (of `block` columns) with the largest maxima, so
    one pass of block maxima narrows the search to k * block columns. torch.topk over the whole
    row is the slow part of a beam step on CPU, and this takes about half its time (figures:
    benchmarks/results.md). Among equal values the columns chosen may differ from torch.topk's.
    Shapes: values (N, V) -> values, columns (N, k).
    """
    rows, width = values.shape
    blocks = width // block
    if blocks <= 2 * k:
        return values.topk(k, dim=1)
    whole = values[:, : blocks * block].view(rows, blocks, block)  # (N, nb, block)
    best_blocks = whole.amax(dim=2).topk(k, dim=1).indices  # (N, k)
    pool = whole.gather(1, best_blocks[:, :, None].expand(rows, k, block)).view(rows, k * block)
    tail = width - blocks * block  # columns after the last whole block: always in the pool
    if tail:
        pool = torch.cat([pool, values[:, blocks * block :]], dim=1)  # (N, k * block + tail)
    top_values, places = pool.topk(k, dim=1)  # (N, k)
    in_blocks = places < k * block
    columns = best_blocks.gather(1, (places // block).clamp(max=k - 1)) * block + places % block
    return top_values, torch.where(in_blocks, columns, places - k * block + blocks * block)


def _split(
    candidates: _Candidates,
    rules: StepRules,
    *,
    beam_size: int,
    step: int,
    alpha: float,
    exact: bool,
) -> tuple[Tensor, Tensor]:
    """Choose the next beams and summarise what the host needs.

    Returns picks (B, K): positions among the candidates of the best K non-eos ones; and the report
    (B, 3K + 1): eos scores of the top K (-inf where none finishes), their beams, their eos
    log-probabilities, and an upper bound on any live beam's final score.
    """
    batch, width = candidates.scores.shape
    is_eos = (candidates.tokens == rules.ids.eos) & torch.isfinite(candidates.scores)  # (B, 2K)
    order = is_eos.long() * width + torch.arange(width, device=is_eos.device)  # non-eos first, by rank
    picks = order.topk(beam_size, dim=1, largest=False).indices  # (B, K), ascending rank
    eos_scores = candidates.scores[:, :beam_size].masked_fill(~is_eos[:, :beam_size], NEG_INF)
    best_live = candidates.scores.gather(1, picks).amax(dim=1)  # (B,): the first pick, unless constrained
    bound = best_live
    if exact:
        longest = rules.max_lens.view(batch, beam_size)[:, 0] + 1  # final length incl. eos
        bound = torch.maximum(
            best_live / length_penalty(step + 2, alpha),
            best_live / length_penalty(longest.double(), alpha).float(),
        )
        bound = bound.masked_fill(torch.isneginf(best_live), NEG_INF)
    report = torch.cat(
        [
            eos_scores,
            candidates.beams[:, :beam_size].float(),
            candidates.logprobs[:, :beam_size],
            bound[:, None],
        ],
        dim=1,
    )
    return picks, report


def _finish(
    finished: list[list[Hypothesis]],
    beams: _Beams,
    report: list[list[float]],
    *,
    alpha: float,
    totals: list[int] | None = None,
) -> None:
    """Record the hypotheses that end with eos at this step. report: `_split`'s report as lists; with
    `totals` (phrases per sentence, a constrained search), columns 3K to 4K - 1 hold how many phrases
    each finishing hypothesis met."""
    beam_size = beams.scores.shape[1]
    ends = [(i, rank) for i, row in enumerate(report) for rank in range(beam_size) if row[rank] != NEG_INF]
    if not ends:
        return
    rows = [i * beam_size + int(report[i][beam_size + rank]) for i, rank in ends]
    index = torch.tensor(rows, device=beams.tokens.device)
    outputs = beams.rules.model_tokens(beams.tokens.index_select(0, index)[:, 1:]).tolist()
    logprobs = beams.positional_scores.index_select(0, index).tolist()
    for (i, rank), output, scores in zip(ends, outputs, logprobs):
        scores.append(report[i][2 * beam_size + rank])
        hypothesis = finished_hypothesis(output, scores, alpha)
        if totals is not None:
            hypothesis.constraints_met = int(report[i][3 * beam_size + rank])
            hypothesis.constraints_total = totals[beams.sentences[i]]
        finished[beams.sentences[i]].append(hypothesis)


def _done(
    finished: list[list[Hypothesis]],
    beams: _Beams,
    report: list[list[float]],
    *,
    step: int,
    limits: list[int],
    options: SearchOptions,
) -> list[bool]:
    """Per sentence still decoded, whether it is done (`_sentence_done`); report: `_split`'s, as lists."""
    return [
        _sentence_done(
            finished[sentence],
            report[i][-1],
            step=step,
            limit=limits[sentence],
            beam_size=options.beam_size,
            nbest=options.nbest,
            exact=not options.stop_early,
        )
        for i, sentence in enumerate(beams.sentences)
    ]


def _sentence_done(
    hyps: list[Hypothesis], bound: float, *, step: int, limit: int, beam_size: int, nbest: int, exact: bool
) -> bool:
    """See the module docstring: limit reached, no live beam, or enough unbeatable hypotheses."""
    if step >= limit or bound == NEG_INF:
        return True
    if not exact:
        return len(hyps) >= beam_size
    if len(hyps) < nbest:
        return False
    return sorted((h.score for h in hyps), reverse=True)[nbest - 1] >= bound


def _advance(
    beams: _Beams, state: SearchState, candidates: _Candidates, picks: Tensor, done: list[bool]
) -> tuple[Tensor, Tensor | None]:
    """Move to the chosen beams and drop the sentences that are done, with one cache reorder.

    Returns the picks as placed (B, K: candidate positions by slot) and the sentences kept (None: all)."""
    batch, beam_size = picks.shape
    picks = picks.gather(1, _parent_slots_first(candidates.beams.gather(1, picks)))
    base = torch.arange(batch, device=picks.device)[:, None] * beam_size  # (B, 1)
    rows = base + candidates.beams.gather(1, picks)  # (B, K) rows of the current N
    tokens, logprobs = candidates.tokens.gather(1, picks), candidates.logprobs.gather(1, picks)  # (B, K)
    scores = candidates.scores.gather(1, picks)  # (B, K)
    alive: Tensor | bool = False  # the sentences kept; False: all of them
    if any(done):
        alive = torch.tensor([i for i, d in enumerate(done) if not d], dtype=torch.long, device=picks.device)
        rows, tokens, logprobs, scores = rows[alive], tokens[alive], logprobs[alive], scores[alive]
        beams.sentences = [s for s, d in zip(beams.sentences, done) if not d]
    index = rows.reshape(-1)  # (B' * K,)
    beams.tokens = torch.cat([beams.tokens.index_select(0, index), tokens.reshape(-1, 1)], dim=1)
    beams.positional_scores = torch.cat(
        [beams.positional_scores.index_select(0, index), logprobs.reshape(-1, 1)], dim=1
    )
    beams.scores = scores
    beams.rules = beams.rules.select(index)
    if index.numel():
        state.reorder(index, memory=alive)  # each kept sentence's K beams stay together
    return picks, None if alive is False else alive


def _parent_slots_first(parents: Tensor) -> Tensor:
    """Arrange each sentence's new beams so that as many as possible stay in their parent's slot.

    The order of a sentence's K beams means nothing to the search, but every beam that changes
    slot costs a copy of its KV-cache rows. So the best child of each parent takes the parent's
    slot, and the other children fill the slots of parents that had none, in rank order.
    Shapes: parents (B, K), the slot of each new beam's parent, in rank order -> order (B, K):
    order[b, s] = the rank of the new beam that goes to slot s.
    """
    batch, beam_size = parents.shape
    same_parent = parents[:, :, None] == parents[:, None, :]  # (B, K, K)
    better = torch.ones(beam_size, beam_size, dtype=torch.bool, device=parents.device).tril(-1)  # j < i
    first_child = ~(same_parent & better).any(dim=2)  # (B, K)
    has_child = torch.zeros_like(first_child).scatter_(1, parents, True)  # (B, K) per slot
    free_slots = has_child.byte().sort(dim=1, stable=True).indices  # (B, K): childless slots first
    extra = (~first_child).long().cumsum(dim=1) - 1  # (B, K) rank among the other children
    slots = torch.where(first_child, parents, free_slots.gather(1, extra.clamp(min=0)))  # (B, K)
    ranks = torch.arange(beam_size, device=parents.device).expand(batch, beam_size)
    return torch.empty_like(slots).scatter_(1, slots, ranks)


__all__ = ["beam_search"]

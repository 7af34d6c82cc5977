"""Batched beam search: every sentence of the batch advances K beams in the same tensor ops.

One step, for B sentences still being decoded (N = B * K rows):
  1. next-token log-probabilities (N, V), constrained (length limits, n-gram blocking, prefixes);
  2. candidates = beam score + token log-prob, viewed (B, K * V); keep the best 2K per sentence;
  3. eos candidates ranked in the top K finish a hypothesis; the best K non-eos candidates become
     the new beams (2K candidates always hold at least K non-eos ones: each beam has one eos);
  4. reorder the KV cache to the surviving beams and, in the same `reorder`, drop sentences that
     are done, so long batches stop paying for finished sentences.
The host receives one small (B, 3K + 1) tensor per step, plus the finished rows' tokens on steps
where some hypothesis ends.

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
from torch import Tensor, nn

from seq2seq.decode import penalties
from seq2seq.decode.common import (
    Hypothesis,
    Prefix,
    StepRules,
    build_rules,
    check_search_arguments,
    constrain_,
    finished_hypothesis,
    next_token_logprobs_,
)
from seq2seq.decode.penalties import NEG_INF
from seq2seq.errors import UserError
from seq2seq.nn.kv_cache import DecoderState


@dataclass
class _Beams:
    """The live beams of the sentences still being decoded (B of them, K beams each)."""

    sentences: list[int]  # original index of each current sentence
    tokens: Tensor  # (B * K, 1 + step): bos and the output so far
    positional: Tensor  # (B * K, step): each output token's log-probability
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
    model: nn.Module,
    src: Tensor,
    *,
    beam_size: int = 5,
    nbest: int = 1,
    length_penalty: float = 1.0,
    max_len_a: float = 1.2,
    max_len_b: float = 10,
    min_len: int = 0,
    no_repeat_ngram_size: int = 0,
    prefix: Prefix = None,
    stop_early: bool = True,
    bos_id: int = 2,
    eos_id: int = 3,
    pad_id: int = 0,
) -> list[list[Hypothesis]]:
    """The `nbest` best hypotheses per sentence, best first (score = log_prob / GNMT penalty).

    `length_penalty` is the GNMT alpha (0 = rank by summed log-probability). `prefix` forces the
    first output tokens: one shared list, one list per sentence (lengths may differ), or a (B, P)
    tensor right-padded with pad_id; forced tokens count in the output, score and length.
    Shapes: src (B, S) right-padded with pad_id -> B lists of `nbest` hypotheses.
    """
    check_search_arguments(model, src, min_len=min_len, max_len_a=max_len_a, max_len_b=max_len_b)
    if beam_size < 1 or not 1 <= nbest <= beam_size:
        raise UserError(f"beam_size={beam_size}, nbest={nbest}: need 1 <= nbest <= beam_size")
    rules = build_rules(
        src,
        copies=beam_size,
        min_len=min_len,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        no_repeat_ngram_size=no_repeat_ngram_size,
        prefix=prefix,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
    )
    limits = rules.max_lens[::beam_size].tolist()  # per sentence, on the host
    state = model.init_state(model.encode(src), beam_size=beam_size)
    batch, device = src.shape[0], src.device
    scores = torch.full((batch, beam_size), NEG_INF, device=device)
    scores[:, 0] = 0.0  # the K beams start identical: expand only the first
    beams = _Beams(
        list(range(batch)),
        torch.full((batch * beam_size, 1), bos_id, dtype=torch.long, device=device),
        torch.zeros(batch * beam_size, 0, device=device),
        scores,
        rules,
    )
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    while beams.sentences:
        step = beams.tokens.shape[1] - 1
        logits, state = model.decode_step(beams.tokens[:, -1:], state)  # (N, V)
        logprobs = constrain_(next_token_logprobs_(logits), beams.tokens, beams.rules)
        candidates = _top_candidates(logprobs, beams.scores)
        picks, report = _split(
            candidates,
            beams.rules,
            beam_size=beam_size,
            step=step,
            eos_id=eos_id,
            alpha=length_penalty,
            exact=not stop_early,
        )
        report = report.cpu()  # the step's one required host sync
        _finish(finished, beams, report, alpha=length_penalty)
        done = [
            _sentence_done(
                finished[sentence],
                float(report[i, -1]),
                step=step,
                limit=limits[sentence],
                beam_size=beam_size,
                nbest=nbest,
                exact=not stop_early,
            )
            for i, sentence in enumerate(beams.sentences)
        ]
        _advance(beams, state, candidates, picks, done)
    return [sorted(hyps, key=lambda h: h.score, reverse=True)[:nbest] for hyps in finished]


def _top_candidates(logprobs: Tensor, scores: Tensor) -> _Candidates:
    """Best 2K (beam, token) expansions per sentence. Shapes: logprobs (B*K, V), scores (B, K).

    Adding a beam's score does not reorder that beam's tokens, so a sentence's best 2K expansions are
    among each beam's best 2K tokens: ranking (B*K, 2K) sums instead of (B, K*V) ones saves building
    a (B, K*V) tensor every step.
    """
    batch, beam_size = scores.shape
    width = min(2 * beam_size, beam_size * logprobs.shape[1])
    per_beam = min(width, logprobs.shape[1])
    beam_logprobs, beam_tokens = logprobs.topk(per_beam, dim=1)  # (B*K, w)
    totals = (scores.view(-1, 1) + beam_logprobs).view(batch, beam_size * per_beam)  # (B, K*w)
    top_scores, top_index = totals.topk(width, dim=1)  # (B, 2K)
    return _Candidates(
        top_scores,
        top_index // per_beam,
        beam_tokens.view(batch, -1).gather(1, top_index),
        beam_logprobs.view(batch, -1).gather(1, top_index),
    )


def _split(
    candidates: _Candidates,
    rules: StepRules,
    *,
    beam_size: int,
    step: int,
    eos_id: int,
    alpha: float,
    exact: bool,
) -> tuple[Tensor, Tensor]:
    """Choose the next beams and summarise what the host needs.

    Returns picks (B, K): positions among the candidates of the best K non-eos ones; and the report
    (B, 3K + 1): eos scores of the top K (-inf where none finishes), their beams, their eos
    log-probabilities, and an upper bound on any live beam's final score.
    """
    batch, width = candidates.scores.shape
    is_eos = (candidates.tokens == eos_id) & torch.isfinite(candidates.scores)  # (B, 2K)
    order = is_eos.long() * width + torch.arange(width, device=is_eos.device)  # non-eos first, by rank
    picks = order.topk(beam_size, dim=1, largest=False).indices  # (B, K), ascending rank
    eos_scores = candidates.scores[:, :beam_size].masked_fill(~is_eos[:, :beam_size], NEG_INF)
    best_live = candidates.scores.gather(1, picks[:, :1]).squeeze(1)  # (B,)
    bound = best_live
    if exact:
        longest = rules.max_lens.view(batch, beam_size)[:, 0] + 1  # final length incl. eos
        bound = torch.maximum(
            best_live / penalties.length_penalty(step + 2, alpha),
            best_live / penalties.length_penalty(longest.double(), alpha).float(),
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


def _finish(finished: list[list[Hypothesis]], beams: _Beams, report: Tensor, *, alpha: float) -> None:
    """Record the hypotheses that end with eos at this step. report: the host copy from `_split`."""
    beam_size = beams.scores.shape[1]
    ends = torch.isfinite(report[:, :beam_size]).nonzero().tolist()  # [(sentence, rank)]
    if not ends:
        return
    rows = [i * beam_size + int(report[i, beam_size + rank]) for i, rank in ends]
    index = torch.tensor(rows, device=beams.tokens.device)
    outputs = beams.tokens.index_select(0, index)[:, 1:].tolist()
    logprobs = beams.positional.index_select(0, index).tolist()
    for (i, rank), output, scores in zip(ends, outputs, logprobs):
        scores.append(float(report[i, 2 * beam_size + rank]))
        finished[beams.sentences[i]].append(finished_hypothesis(output, scores, alpha))


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
    beams: _Beams, state: DecoderState, candidates: _Candidates, picks: Tensor, done: list[bool]
) -> None:
    """Move to the chosen beams and drop the sentences that are done, with one cache reorder."""
    batch, beam_size = picks.shape
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
    beams.positional = torch.cat([beams.positional.index_select(0, index), logprobs.reshape(-1, 1)], dim=1)
    beams.scores = scores
    beams.rules = beams.rules.select(index)
    if index.numel():
        state.reorder(index, memory=alive)  # each kept sentence's K beams stay together


__all__ = ["beam_search"]

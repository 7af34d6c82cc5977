"""The per-step rules every search applies: argument checks, length limits, forced prefixes, n-gram
blocking, avoided phrases and shortlist candidates, from one SearchOptions.

Conventions for all searches:
  * A hypothesis' tokens exclude bos and eos; its `log_prob` sums the model's log-probabilities of
    every output token *including* the final eos; its length for the penalty is len(tokens) + 1.
  * Output length limits count tokens before eos: at most floor(max_len_a * src_len + max_len_b)
    where src_len counts the non-pad source tokens (eos included), and never more than the model's
    positions hold (`max_positions - 1`: bos takes position 0); at least `min_len`.
  * pad and bos are never generated.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.decode.constraints import Avoided
from seq2seq.decode.hypotheses import Prefix, SpecialIds, StopCheck, check_stop
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.penalties import (
    NEG_INF,
    force_tokens,
    limit_lengths_,
    max_output_lengths,
    no_repeat_ngram_allowed,
)
from seq2seq.decode.searchable import SearchableModel, SearchState
from seq2seq.decode.shortlist import BatchCandidates, RowCandidates, sentence_candidates
from seq2seq.errors import UserError

log = logging.getLogger(__name__)


@dataclass
class StepRules:
    """Everything that constrains the next token, for the N rows currently decoded."""

    min_len: int
    max_lens: Tensor  # (N,) long: output tokens allowed before eos
    first_limit: int  # a lower bound of max_lens, known on the host
    prefix: Tensor | None  # (N, P) forced tokens, ids.pad where free, or None
    no_repeat_ngram_size: int
    ids: SpecialIds
    avoid: Avoided | None = None  # phrases no output may contain (seq2seq.decode.constraints)
    candidates: RowCandidates | None = None  # under a shortlist: the tokens each row's sentence may produce
    stop: StopCheck | None = None  # asked at every step (`next_token_scores`): True ends the search
    columns: Tensor | None = None  # (C,) searching a shortlist's columns: each column's token id

    def model_tokens(self, tokens: Tensor) -> Tensor:
        """The model's token ids of the search's tokens: the same, unless the search runs over a shortlist's
        columns (`columns`; then ids, prefixes and avoided phrases are column indices too)."""
        return tokens if self.columns is None else self.columns[tokens]

    def select(self, index: Tensor) -> StepRules:
        """The rules for rows `index` (after beams are reordered or finished sentences dropped)."""
        prefix = None if self.prefix is None else self.prefix.index_select(0, index)
        return StepRules(
            self.min_len,
            self.max_lens.index_select(0, index),
            self.first_limit,
            prefix,
            self.no_repeat_ngram_size,
            self.ids,
            self.avoid,
            None if self.candidates is None else self.candidates.select(index),
            stop=self.stop,
            columns=self.columns,
        )


def next_token_logprobs_(logits: Tensor) -> Tensor:
    """Float32 log-softmax over the vocabulary, written over `logits` when they are float32 already.

    The caller gives up `logits` (a decode step's fresh output). Reusing their buffer saves a new
    (N, V) allocation per step, which on CPU costs page faults at this size (a few percent of a beam
    step: benchmarks/results.md; same outputs and scores, bitwise).
    Shapes: (N, V) -> (N, V).
    """
    scores = logits.float()  # the same tensor for float32 logits
    return torch.log_softmax(scores, dim=-1, out=scores)


def next_token_scores(logits: Tensor, tokens: Tensor, rules: StepRules, *, log_probs: bool = False) -> Tensor:
    """The step's constrained float32 log-probabilities, computed over `logits` (the caller gives them up);
    `log_probs`: the model's decode_step returned log-probabilities already (an Ensemble), used as they are.
    Under a shortlist each row is normalised over its own sentence's candidates (`rules.candidates`), as
    if its sentence were searched alone; an Ensemble does the same for each member itself.

    Raises SearchStopped first when `rules.stop` says so: every search loop comes here once a step.

    Shapes: logits (N, V); tokens (N, 1 + step) = bos and the output so far -> (N, V).
    """
    check_stop(rules.stop)
    if log_probs:
        return constrain_(logits.float(), tokens, rules)
    if rules.candidates is not None:
        logits = rules.candidates.restrict_(logits.float())
    return constrain_(next_token_logprobs_(logits), tokens, rules)


def start_search(
    model: SearchableModel,
    src: Tensor,
    options: SearchOptions,
    *,
    copies: int,
    prefix: Prefix,
    ids: SpecialIds,
    avoid: Avoided | None = None,
    stop: StopCheck | None = None,
) -> tuple[StepRules, SearchState]:
    """What every search does first: check the arguments, build the rules for B * copies rows (with the
    batch's per-sentence shortlist candidates, under seq2seq.decode.shortlist.restricted), encode the
    sources and make the decoder state, its caches sized for the longest output allowed (static caches,
    seq2seq.decode.compiled: all of it; growing ones: up to `cache_steps`). `stop`: asked at every step
    (StepRules.stop)."""
    check_search_arguments(model, src, options)
    rules = build_rules(
        src,
        options,
        copies=copies,
        prefix=prefix,
        ids=ids,
        longest_allowed=model.output_room(src),
        avoid=avoid,
        candidates=sentence_candidates(model),
        stop=stop,
    )
    longest = int(rules.max_lens.max()) if rules.max_lens.numel() else 0
    steps = longest + 1 if model.static_decoding else cache_steps(longest)
    state = model.init_state(model.encode(src), beam_size=copies, max_steps=steps)
    return rules, state


def constrain_(logprobs: Tensor, tokens: Tensor, rules: StepRules) -> Tensor:
    """Apply every rule to the next-token log-probabilities, in place.

    A forced prefix token is written whatever the other rules say (an avoided phrase or a repeated
    n-gram in the prefix itself), with its model log-probability: the rules bar what the search chooses,
    and CTranslate2's target_prefix does the same. Shapes: logprobs (N, V); tokens (N, 1 + step) = bos
    and the output so far -> (N, V).
    """
    step = tokens.shape[1] - 1
    forced = rules.prefix[:, step] if rules.prefix is not None and step < rules.prefix.shape[1] else None
    scores = None if forced is None else logprobs.gather(1, forced.clamp(min=0)[:, None]).squeeze(1)  # (N,)
    logprobs[:, rules.ids.pad] = NEG_INF
    if rules.ids.bos != rules.ids.eos:  # M2M100/NLLB start from eos, which must stay possible
        logprobs[:, rules.ids.bos] = NEG_INF
    if rules.no_repeat_ngram_size > 0 and step >= rules.no_repeat_ngram_size - 1:
        allowed = no_repeat_ngram_allowed(tokens[:, 1:], rules.no_repeat_ngram_size, logprobs.shape[1])
        logprobs.masked_fill_(~allowed, NEG_INF)
    if rules.avoid is not None:
        rules.avoid.ban_(logprobs, tokens[:, 1:])
    limit_lengths_(
        logprobs,
        step=step,
        min_len=rules.min_len,
        max_lens=rules.max_lens,
        first_limit=rules.first_limit,
        eos_id=rules.ids.eos,
    )
    if forced is not None:
        logprobs = force_tokens(logprobs, forced, free_id=rules.ids.pad, scores=scores)
    return logprobs


def cache_steps(longest_output: int) -> int:
    """Steps the KV caches allocate up front: bos + every output token, up to 128 (beyond, they grow).

    The bound keeps a generous user limit (max_len_b=1000) from reserving memory that short
    outputs never use; growing by doubling from 128 costs little.
    """
    return min(longest_output + 1, 128)


def source_lengths(src: Tensor, pad_id: int) -> Tensor:
    """Non-pad tokens per sentence. Shapes: src (B, S) -> (B,)."""
    return (src != pad_id).sum(dim=1)


def prepare_prefix(
    prefix: Prefix, batch_size: int, *, device: torch.device, ids: SpecialIds
) -> Tensor | None:
    """Normalise the forced prefixes to a (B, P) tensor right-padded with ids.pad (None when empty)."""
    pad_id = ids.pad
    if prefix is None:
        return None
    if isinstance(prefix, Tensor):
        rows = prefix.tolist()
        rows = [rows] * batch_size if prefix.dim() == 1 else [[t for t in row if t != pad_id] for row in rows]
    elif len(prefix) > 0 and all(isinstance(t, int) for t in prefix):
        rows = [list(prefix)] * batch_size  # one shared prefix
    else:
        rows = [list(row) for row in prefix]
    if len(rows) != batch_size:
        raise UserError(
            f"got {len(rows)} prefixes for {batch_size} sentences; pass one per sentence or one shared"
        )
    width = max((len(row) for row in rows), default=0)
    if width == 0:
        return None
    for row in rows:
        if {ids.pad, ids.bos, ids.eos} & set(row):
            raise UserError(
                f"prefix {row} contains pad, bos or eos (ids {ids.pad}, {ids.bos}, {ids.eos}); "
                "pass only the output tokens to force"
            )
    padded = [row + [pad_id] * (width - len(row)) for row in rows]
    return torch.tensor(padded, dtype=torch.long, device=device)


def check_search_arguments(model: SearchableModel, src: Tensor, options: SearchOptions) -> None:
    if src.dim() != 2 or src.dtype != torch.long:
        raise UserError(f"src must be a (batch, length) LongTensor, got {tuple(src.shape)} {src.dtype}")
    if options.min_len < 0 or options.max_len_a < 0:
        raise UserError(f"min_len={options.min_len} and max_len_a={options.max_len_a} must be non-negative")
    if options.max_len_b < 0 and options.max_len_a == 0:
        raise UserError(
            f"max_len_b={options.max_len_b} with max_len_a=0 allows no output; pass max_len_b >= 0"
        )
    if model.training:
        log.warning("decoding with a model in training mode (dropout active); call model.eval() first")


def build_rules(
    src: Tensor,
    options: SearchOptions,
    *,
    copies: int,
    prefix: Prefix,
    ids: SpecialIds,
    longest_allowed: int | Tensor | None = None,
    avoid: Avoided | None = None,
    candidates: BatchCandidates | None = None,
    stop: StopCheck | None = None,
) -> StepRules:
    """The length limits and constraints of `options` for B * copies rows (row b * copies + k belongs to
    sentence b), built once per search; no limit exceeds `longest_allowed` (the model's positions: one
    number, or one per sentence (B,)). `candidates`: the tokens each sentence may produce (a shortlist's);
    compact ones make the search run over their columns (`in_columns`). `stop`: StepRules.stop."""
    forced = prepare_prefix(prefix, src.shape[0], device=src.device, ids=ids)
    prefix_lengths = torch.zeros_like(src[:, 0]) if forced is None else (forced != ids.pad).sum(dim=1)
    limits = max_output_lengths(
        source_lengths(src, ids.pad), a=options.max_len_a, b=options.max_len_b
    )  # (B,)
    if longest_allowed is not None:
        allowed = torch.as_tensor(longest_allowed, device=limits.device).expand_as(limits)  # (B,)
        if bool((allowed < 0).any()):
            raise UserError(
                f"a source leaves no room for output in the model's positions (it is {int(-allowed.min())} "
                "tokens too long); shorten the input or split it"
            )
        limits = torch.minimum(limits, allowed)
        if forced is not None and bool((prefix_lengths > allowed).any()):
            raise UserError(
                f"a forced prefix of {int(prefix_lengths.max())} tokens does not fit the model's "
                f"{int(allowed.min()) + 1} positions left (bos included); shorten the prefix"
            )
    max_lens = torch.maximum(limits, prefix_lengths)  # a forced prefix always fits
    if copies > 1:
        max_lens = max_lens.repeat_interleave(copies)
        forced = None if forced is None else forced.repeat_interleave(copies, dim=0)
    first_limit = int(max_lens.min()) if max_lens.numel() else 0
    rules = StepRules(
        options.min_len, max_lens, first_limit, forced, options.no_repeat_ngram_size, ids, avoid, None, stop
    )
    if candidates is None:
        return rules
    if candidates.keep.shape[0] != src.shape[0]:
        raise ValueError(f"shortlist candidates for {candidates.keep.shape[0]} sentences, not {src.shape[0]}")
    candidates = candidates.to(src.device)
    rules.candidates = RowCandidates.of(candidates, copies)
    return in_columns(rules, candidates.columns) if candidates.compact else rules


def in_columns(rules: StepRules, columns: Tensor) -> StepRules:
    """`rules` for a search over the columns of a compact shortlist projection: the special ids, forced
    prefixes and avoided phrases become column indices, and StepRules.model_tokens maps back.

    The same search over C columns instead of V tokens: every token outside the columns has -inf
    already, and none of the rules can bring it back. Shapes: columns (C,) sorted token ids."""
    ids = rules.ids
    specials = to_columns(torch.tensor([ids.bos, ids.eos, ids.pad], device=columns.device), columns)
    rules.ids = SpecialIds(*specials.tolist())
    rules.prefix = None if rules.prefix is None else to_columns(rules.prefix, columns)
    rules.avoid = None if rules.avoid is None else rules.avoid.in_columns(columns)
    rules.columns = columns
    return rules


def to_columns(tokens: Tensor, columns: Tensor) -> Tensor:
    """Each token's column among `columns` (C,) sorted ids; every token must be one of them (a shortlist's
    candidates hold each sentence's prefix and the special ids). Shapes: tokens (...) -> (...)."""
    place = torch.searchsorted(columns, tokens.contiguous()).clamp_(max=columns.shape[0] - 1)
    if not bool((columns[place] == tokens).all()):
        raise ValueError("a forced or special token is not among the shortlist's candidate columns")
    return place

"""Search many sentences: sort by length, batch by a token budget, search each batch, restore input order.

Shared by validation during training and by the Translator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any

import torch

from seq2seq.decode.beam import beam_search
from seq2seq.decode.constrained import constrained_beam_search
from seq2seq.decode.constraints import Avoided
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.hypotheses import SPECIAL_IDS, Hypothesis, Prefix, SpecialIds, StopCheck, check_stop
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.sampling import sampling_search
from seq2seq.decode.searchable import SearchableModel
from seq2seq.decode.shortlist import Shortlist, full_vocabulary, restricted
from seq2seq.decode.teacher_forcing import score_outputs_
from seq2seq.errors import UserError
from seq2seq.precision import autocast


def length_sorted_batches(
    lengths: list[int], max_tokens: int, max_sentences: int = 256
) -> Iterator[list[int]]:
    """Indices grouped so that (sentences x longest length) stays within max_tokens, longest first."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for index in order:
        longest = lengths[batch[0]] if batch else lengths[index]
        if batch and ((len(batch) + 1) * longest > max_tokens or len(batch) >= max_sentences):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def pad_batch(sequences: list[list[int]], pad_id: int) -> torch.Tensor:
    """Shapes: list of B token lists -> (B, longest) right-padded."""
    longest = max(len(s) for s in sequences)
    out = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return out


@torch.inference_mode()
def search_ids(
    model: SearchableModel,
    sources: list[list[int]],
    *,
    options: SearchOptions,
    ids: SpecialIds,
    device: torch.device,
    max_tokens: int = 4096,
    precision: str = "fp32",
    prefixes: Sequence[Sequence[int]] | None = None,
    on_batch: Callable[[int], Any] | None = None,
    shortlist: Shortlist | None = None,
    constraints: Sequence[Sequence[Sequence[int]]] | None = None,
    avoid: Sequence[Sequence[int]] | None = None,
    continuing: torch.Tensor | None = None,
    confidence: bool = False,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """Search every source (token ids ending in eos); returns the n-best hypotheses per source, in order.

    An empty source yields an empty hypothesis list (the caller writes an empty line). `prefixes`: the
    output tokens forced at the start of each source's hypotheses (one list per source, [] for none).
    `shortlist`: each batch's output projection runs on its candidate tokens only, and each sentence is
    searched over its own candidates (seq2seq.decode.shortlist); with `confidence`, the hypotheses found
    are then scored over the full vocabulary (seq2seq.decode.teacher_forcing), so that their per-token
    log-probabilities are the model's own (without a shortlist they are already).
    `constraints`: target phrases each source's output must contain (one list of phrases per source, []
    for none: seq2seq.decode.constrained); `avoid`: phrases no output may contain; `continuing`: the
    target pieces that continue a word, which may not follow a completed phrase. `stop`: asked before
    each batch and at every decoding step; True ends the
    search with SearchStopped (seq2seq.decode.hypotheses).
    """
    model.eval()
    results: list[list[Hypothesis]] = [[] for _ in sources]
    lengths = [len(s) for s in sources]
    todo = [i for i, n in enumerate(lengths) if n > 0]
    generator = torch.Generator(device=device).manual_seed(options.seed) if options.sampling else None
    banned = Avoided.of(avoid or [], device)
    for batch in length_sorted_batches([lengths[i] for i in todo], max_tokens):
        check_stop(stop)
        indices = [todo[i] for i in batch]
        src = pad_batch([sources[i] for i in indices], ids.pad).to(device)  # (B, S)
        prefix = None if prefixes is None else [list(prefixes[i]) for i in indices]
        wanted = None if constraints is None else [constraints[i] for i in indices]
        keep = None if shortlist is None else shortlist.keep(src, _needed(prefix, wanted), pad_id=ids.pad)
        with autocast(precision, device):
            columns = over_columns(options, wanted)
            with (
                nullcontext()
                if keep is None
                else restricted(model, keep, specials=_specials(ids), compact=columns)
            ):
                hypotheses = search(
                    model, src, options, generator=generator, prefix=prefix, ids=ids, constraints=wanted,
                    avoid=banned, continuing=continuing, stop=stop,
                )  # fmt: skip
            if keep is not None and confidence:
                with full_vocabulary(model):
                    score_outputs_(model, src, hypotheses, ids)
        for index, nbest in zip(indices, hypotheses):
            results[index] = nbest
        if on_batch is not None:
            on_batch(len(indices))
    return results


def search(
    model: SearchableModel,
    src: torch.Tensor,
    options: SearchOptions,
    *,
    generator: torch.Generator | None = None,
    prefix: Prefix = None,
    ids: SpecialIds = SPECIAL_IDS,
    constraints: Sequence[Sequence[Sequence[int]]] | None = None,
    avoid: Avoided | None = None,
    continuing: torch.Tensor | None = None,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """The search `options` describe (sampling, greedy or beam) on one batch: B n-best lists, best first.

    With `constraints` that hold a phrase, the constrained beam search (greedy: with one beam); sampling
    cannot take them. `stop`: asked at every step (SearchStopped).
    Shapes: src (B, S) right-padded with pad_id -> B lists of hypotheses.
    """
    if constraints is not None and any(constraints):
        if options.sampling:
            raise UserError("constraints need beam or greedy search, not sampling; use decode=beam")
        return constrained_beam_search(
            model,
            src,
            options,
            constraints,
            prefix=prefix,
            ids=ids,
            avoid=avoid,
            continuing=continuing,
            stop=stop,
        )
    if options.sampling:
        samples = sampling_search(
            model, src, options, generator=generator, prefix=prefix, ids=ids, avoid=avoid, stop=stop
        )
        return [sorted(row, key=lambda h: h.score, reverse=True) for row in samples]
    if not options.searches_beams:
        found = greedy_search(model, src, options, prefix=prefix, ids=ids, avoid=avoid, stop=stop)
        return [[hypothesis] for hypothesis in found]
    return beam_search(model, src, options, prefix=prefix, ids=ids, avoid=avoid, stop=stop)


def over_columns(options: SearchOptions, constraints: Sequence[Sequence[Sequence[int]]] | None) -> bool:
    """Whether the search runs over a shortlist's candidate columns only (step_rules.in_columns): greedy
    and beam search do; sampling keeps the whole vocabulary's width, so that a seed draws the
    same samples with and without a shortlist, and constrained search, whose phrase bookkeeping is
    in token ids, keeps it too."""
    return not options.sampling and not (constraints is not None and any(constraints))


def _specials(ids: SpecialIds) -> tuple[int, int, int]:
    return ids.pad, ids.bos, ids.eos


def _needed(
    prefixes: list[list[int]] | None, constraints: Sequence[Sequence[Sequence[int]]] | None
) -> list[list[int]]:
    """Per sentence, the target tokens it must be able to produce: its forced prefix's and constraints'."""
    needed = [list(prefix) for prefix in prefixes or []] or [[] for _ in constraints or []]
    for row, phrases in enumerate(constraints or []):
        needed[row] += [token for phrase in phrases for token in phrase]
    return needed


def best_tokens(results: Iterable[list[Any]]) -> list[list[int]]:
    """The top hypothesis' tokens per source ([] where there was none)."""
    return [list(nbest[0].tokens) if nbest else [] for nbest in results]

"""Search many sentences: sort by length, batch by a token budget, search each batch, restore input order.

Shared by validation during training and by the Translator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any

import torch
from torch import nn

from seq2seq.decode.beam import beam_search
from seq2seq.decode.common import SPECIAL_IDS, Hypothesis, Prefix, SpecialIds
from seq2seq.decode.constrained import constrained_beam_search
from seq2seq.decode.constraints import Avoided
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.sampling import sampling_search
from seq2seq.decode.shortlist import Shortlist, restricted
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
    model: nn.Module,
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
) -> list[list[Hypothesis]]:
    """Search every source (token ids ending in eos); returns the n-best hypotheses per source, in order.

    An empty source yields an empty hypothesis list (the caller writes an empty line). `prefixes`: the
    output tokens forced at the start of each source's hypotheses (one list per source, [] for none).
    `shortlist`: each batch's output projection runs on its candidate tokens only (seq2seq.decode.shortlist).
    `constraints`: target phrases each source's output must contain (one list of phrases per source, []
    for none: seq2seq.decode.constrained); `avoid`: phrases no output may contain; `continuing`: the
    target pieces that continue a word, which may not follow a completed phrase.
    """
    model.eval()
    results: list[list[Hypothesis]] = [[] for _ in sources]
    lengths = [len(s) for s in sources]
    todo = [i for i, n in enumerate(lengths) if n > 0]
    generator = torch.Generator(device=device).manual_seed(options.seed) if options.sampling else None
    banned = Avoided.of(avoid or [], device)
    for batch in length_sorted_batches([lengths[i] for i in todo], max_tokens):
        indices = [todo[i] for i in batch]
        src = pad_batch([sources[i] for i in indices], ids.pad).to(device)  # (B, S)
        prefix = None if prefixes is None else [list(prefixes[i]) for i in indices]
        wanted = None if constraints is None else [constraints[i] for i in indices]
        only = (
            restricted(model, shortlist.candidates(src, _needed(prefix, wanted)))
            if shortlist
            else nullcontext()
        )
        with autocast(precision, device), only:
            hypotheses = search(
                model, src, options, generator=generator, prefix=prefix, ids=ids, constraints=wanted,
                avoid=banned, continuing=continuing,
            )  # fmt: skip
        for index, nbest in zip(indices, hypotheses):
            results[index] = nbest
        if on_batch is not None:
            on_batch(len(indices))
    return results


def search(
    model: nn.Module,
    src: torch.Tensor,
    options: SearchOptions,
    *,
    generator: torch.Generator | None = None,
    prefix: Prefix = None,
    ids: SpecialIds = SPECIAL_IDS,
    constraints: Sequence[Sequence[Sequence[int]]] | None = None,
    avoid: Avoided | None = None,
    continuing: torch.Tensor | None = None,
) -> list[list[Hypothesis]]:
    """The search `options` describe (sampling, greedy or beam) on one batch: B n-best lists, best first.

    With `constraints` that hold a phrase, the constrained beam search (greedy: with one beam); sampling
    cannot take them. Shapes: src (B, S) right-padded with pad_id -> B lists of hypotheses.
    """
    if constraints is not None and any(constraints):
        if options.sampling:
            raise UserError("constraints need beam or greedy search, not sampling; use decode=beam")
        return constrained_beam_search(
            model, src, options, constraints, prefix=prefix, ids=ids, avoid=avoid, continuing=continuing
        )
    if options.sampling:
        samples = sampling_search(
            model, src, options, generator=generator, prefix=prefix, ids=ids, avoid=avoid
        )
        return [sorted(row, key=lambda h: h.score, reverse=True) for row in samples]
    if not options.searches_beams:
        found = greedy_search(model, src, options, prefix=prefix, ids=ids, avoid=avoid)
        return [[hypothesis] for hypothesis in found]
    return beam_search(model, src, options, prefix=prefix, ids=ids, avoid=avoid)


def _needed(
    prefixes: list[list[int]] | None, constraints: Sequence[Sequence[Sequence[int]]] | None
) -> list[list[int]] | None:
    """The target tokens a batch must be able to produce: its forced prefixes' and constraints'."""
    needed = [list(prefix) for prefix in prefixes or []]
    needed += [list(phrase) for phrases in constraints or [] for phrase in phrases]
    return needed or None


def best_tokens(results: Iterable[list[Any]]) -> list[list[int]]:
    """The top hypothesis' tokens per source ([] where there was none)."""
    return [list(nbest[0].tokens) if nbest else [] for nbest in results]

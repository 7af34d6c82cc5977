"""Translate many sentences: sort by length, batch by a token budget, search, restore input order.

Shared by validation during training and by `seq2seq-translate`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from seq2seq.decode.beam import beam_search
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.sampling import sampling_search
from seq2seq.errors import UserError


@dataclass
class SearchOptions:
    """How to search; the `decode` config group holds the same keys."""

    beam_size: int = 1
    nbest: int = 1
    length_penalty: float = 1.0
    max_len_a: float = 1.2
    max_len_b: int = 10
    min_len: int = 0
    no_repeat_ngram_size: int = 0
    sampling: bool = False  # sample instead of searching: nbest samples per sentence
    temperature: float = 1.0
    top_k: int = 0  # 0 = no top-k filter
    top_p: float = 1.0  # 1 = no nucleus filter
    seed: int = 0  # with sampling: the same seed and input give the same output

    @classmethod
    def from_config(cls, decode: Mapping[str, Any]) -> SearchOptions:
        """The options of a `decode` config group; a value of the wrong type is a one-line UserError.

        Keys that are not search options are ignored (config groups may carry comments-as-keys).
        """
        values = {}
        for name, field in cls.__dataclass_fields__.items():
            if name not in decode:
                continue
            value, kind = decode[name], {"int": int, "float": float, "bool": bool}[field.type]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                example = f"decode.{name}={field.default}"
                raise UserError(f"decode.{name}={value!r} must be {field.type}; e.g. {example}")
            values[name] = value
        return cls(**values)

    def describe(self) -> str:
        """A few words for logs: "beam 5", "greedy", "sampling (temperature 1.0, top-k 0, top-p 0.9)"."""
        if self.sampling:
            return f"sampling (temperature {self.temperature}, top-k {self.top_k}, top-p {self.top_p})"
        return "greedy search" if self.beam_size == 1 and self.nbest == 1 else f"beam {self.beam_size}"


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
    bos_id: int,
    eos_id: int,
    pad_id: int,
    device: torch.device,
    max_tokens: int = 4096,
    precision: str = "fp32",
    on_batch: Callable[[int], Any] | None = None,
) -> list[list[Any]]:
    """Search every source (token ids ending in eos); returns the n-best hypotheses per source, in order.

    An empty source list element yields an empty hypothesis list (the caller writes an empty line).
    """
    model.eval()
    results: list[list[Any]] = [[] for _ in sources]
    lengths = [len(s) for s in sources]
    todo = [i for i, n in enumerate(lengths) if n > 0]
    generator = torch.Generator(device=device).manual_seed(options.seed) if options.sampling else None
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
    for batch in length_sorted_batches([lengths[i] for i in todo], max_tokens):
        indices = [todo[i] for i in batch]
        src = pad_batch([sources[i] for i in indices], pad_id).to(device)  # (B, S)
        with autocast:
            hypotheses = _search(
                model, src, options, generator=generator, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id
            )
        for index, nbest in zip(indices, hypotheses):
            results[index] = nbest
        if on_batch is not None:
            on_batch(len(indices))
    return results


def _search(
    model: nn.Module,
    src: torch.Tensor,
    options: SearchOptions,
    *,
    generator: torch.Generator | None,
    **ids: int,
) -> list[list[Any]]:
    common = dict(
        max_len_a=options.max_len_a,
        max_len_b=options.max_len_b,
        min_len=options.min_len,
        no_repeat_ngram_size=options.no_repeat_ngram_size,
        **ids,
    )
    if options.sampling:
        samples = sampling_search(
            model,
            src,
            generator=generator,
            temperature=options.temperature,
            top_k=options.top_k,
            top_p=options.top_p,
            num_samples=options.nbest,
            **common,
        )
        return [sorted(row, key=lambda h: h.score, reverse=True) for row in samples]
    if options.beam_size == 1 and options.nbest == 1:
        return [[hypothesis] for hypothesis in greedy_search(model, src, **common)]
    return beam_search(
        model,
        src,
        beam_size=options.beam_size,
        nbest=options.nbest,
        length_penalty=options.length_penalty,
        **common,
    )


def best_tokens(results: Iterable[list[Any]]) -> list[list[int]]:
    """The top hypothesis' tokens per source ([] where there was none)."""
    return [list(nbest[0].tokens) if nbest else [] for nbest in results]

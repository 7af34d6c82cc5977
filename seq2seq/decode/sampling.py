"""Sampling: temperature, top-k and nucleus (top-p), batched and reproducible with a torch.Generator."""

from __future__ import annotations

import torch
from torch import Tensor

from seq2seq.decode.constraints import Avoided
from seq2seq.decode.greedy import decode_paths
from seq2seq.decode.hypotheses import SPECIAL_IDS, Hypothesis, Prefix, SpecialIds, StopCheck
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.penalties import top_k_top_p_filter
from seq2seq.decode.searchable import SearchableModel
from seq2seq.errors import UserError


def sampling_search(
    model: SearchableModel,
    src: Tensor,
    options: SearchOptions,
    *,
    generator: torch.Generator | None = None,
    prefix: Prefix = None,
    ids: SpecialIds = SPECIAL_IDS,
    avoid: Avoided | None = None,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """`options.nbest` independent samples per sentence from softmax(logits / temperature), filtered.

    top_k = 0 and top_p = 1 disable the filters; top_k = 1 is greedy search. The same generator
    state and inputs give the same samples (the generator must live on src's device). Scores are
    the model's own log-probabilities (temperature 1, unfiltered), so samples rank like beams.
    `stop`: asked at every step; True ends the search with SearchStopped (seq2seq.decode.hypotheses).
    Shapes: src (B, S) -> B lists of `options.nbest` hypotheses.
    """
    temperature, top_k, top_p = options.temperature, options.top_k, options.top_p
    if temperature <= 0:
        raise UserError(
            f"temperature={temperature} must be positive; for temperature 0 use greedy search (decode=greedy)"
        )
    if top_k < 0 or not 0.0 < top_p <= 1.0 or options.nbest < 1:
        raise UserError(
            f"top_k={top_k}, top_p={top_p}, nbest={options.nbest}: "
            "need top_k >= 0, 0 < top_p <= 1 and nbest >= 1"
        )

    def choose(logprobs: Tensor) -> Tensor:
        logits = top_k_top_p_filter(logprobs / temperature, top_k=top_k, top_p=top_p)  # (N, V)
        return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(1)

    return decode_paths(
        model,
        src,
        options,
        choose=choose,
        copies=options.nbest,
        prefix=prefix,
        ids=ids,
        avoid=avoid,
        stop=stop,
    )


__all__ = ["sampling_search"]

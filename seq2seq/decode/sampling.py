"""Sampling: temperature, top-k and nucleus (top-p), batched and reproducible with a torch.Generator."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seq2seq.decode.common import Hypothesis, Prefix
from seq2seq.decode.greedy import decode_paths
from seq2seq.decode.penalties import top_k_top_p_filter
from seq2seq.errors import UserError


def sampling_search(
    model: nn.Module,
    src: Tensor,
    *,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    num_samples: int = 1,
    max_len_a: float = 1.2,
    max_len_b: float = 10,
    min_len: int = 0,
    no_repeat_ngram_size: int = 0,
    prefix: Prefix = None,
    bos_id: int = 2,
    eos_id: int = 3,
    pad_id: int = 0,
) -> list[list[Hypothesis]]:
    """`num_samples` independent samples per sentence from softmax(logits / temperature), filtered.

    top_k = 0 and top_p = 1 disable the filters; top_k = 1 is greedy search. The same generator
    state and inputs give the same samples (the generator must live on src's device). Scores are
    the model's own log-probabilities (temperature 1, unfiltered), so samples rank like beams.
    Shapes: src (B, S) -> B lists of `num_samples` hypotheses.
    """
    if temperature <= 0:
        raise UserError(
            f"temperature={temperature} must be positive; for temperature 0 use greedy search (decode=greedy)"
        )
    if top_k < 0 or not 0.0 < top_p <= 1.0 or num_samples < 1:
        raise UserError(
            f"top_k={top_k}, top_p={top_p}, num_samples={num_samples}: "
            "need top_k >= 0, 0 < top_p <= 1 and num_samples >= 1"
        )

    def choose(logprobs: Tensor) -> Tensor:
        logits = top_k_top_p_filter(logprobs / temperature, top_k=top_k, top_p=top_p)  # (N, V)
        return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(1)

    return decode_paths(
        model,
        src,
        choose=choose,
        copies=num_samples,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        min_len=min_len,
        no_repeat_ngram_size=no_repeat_ngram_size,
        prefix=prefix,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
    )


__all__ = ["sampling_search"]

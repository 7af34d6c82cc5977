"""The model's own log-probability of each token of outputs a search found, by teacher forcing over the
full vocabulary.

A search on a vocabulary shortlist normalises each step over its sentence's candidates only
(seq2seq.decode.shortlist), so its per-token log-probabilities are larger than the model's. Confidence
promises the model's own, so where it is asked for, the found outputs are scored again here: one
teacher-forced forward pass of the batch's hypotheses (in groups whose logits stay within MAX_LOGITS
numbers), as CTranslate2's engine does with `score_batch`. An ensemble's value is the mean of its
members' log-probabilities, as its search step's is.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from seq2seq.decode.ensemble import members_of
from seq2seq.decode.hypotheses import Hypothesis, SpecialIds
from seq2seq.decode.searchable import SearchableModel

MAX_LOGITS = 1 << 24  # (positions x vocabulary) logits held at once: 64 MiB in float32


@torch.inference_mode()
def score_outputs_(
    model: SearchableModel, src: Tensor, hypotheses: list[list[Hypothesis]], ids: SpecialIds
) -> None:
    """Set each hypothesis' `positional_scores` (its tokens, then eos) and `log_prob` (their sum) to the
    model's own over the full vocabulary; `score` stays the search's, which ranked the n-best list.

    Shapes: src (B, S) right-padded; hypotheses: B n-best lists, those of src's sentences.
    """
    rows = [(sentence, h) for sentence, nbest in enumerate(hypotheses) for h in nbest]
    vocab = int(model.config["tgt_vocab_size"])
    for group in _groups(rows, max(1, MAX_LOGITS // vocab)):
        sentences = torch.tensor([sentence for sentence, _ in group], device=src.device)
        outputs = [hypothesis.tokens for _, hypothesis in group]
        scores = _token_log_probs(model, src.index_select(0, sentences), outputs, ids)
        for (_, hypothesis), values in zip(group, scores):
            hypothesis.positional_scores = values
            hypothesis.log_prob = float(sum(values))


def _groups(rows: list[tuple[int, Hypothesis]], positions: int) -> Iterator[list[tuple[int, Hypothesis]]]:
    """The rows by length, in groups of at most `positions` output tokens (eos included; one row at least)."""
    group: list[tuple[int, Hypothesis]] = []
    used = 0
    for row in sorted(rows, key=lambda row: len(row[1].tokens)):
        if group and used + len(row[1].tokens) + 1 > positions:
            yield group
            group, used = [], 0
        group.append(row)
        used += len(row[1].tokens) + 1
    if group:
        yield group


def _token_log_probs(
    model: SearchableModel, src: Tensor, outputs: list[list[int]], ids: SpecialIds
) -> list[list[float]]:
    """Per output, the log-probability of each of its tokens and of eos. Shapes: src (G, S), G outputs."""
    lengths = torch.tensor([len(output) + 1 for output in outputs], device=src.device)  # (G,)
    width = int(lengths.max())
    tgt_in = torch.full((len(outputs), width), ids.pad, dtype=torch.long, device=src.device)  # (G, T)
    tgt_out = torch.full_like(tgt_in, ids.pad)  # (G, T)
    for row, output in enumerate(outputs):
        tgt_in[row, : len(output) + 1] = torch.tensor([ids.bos, *output])
        tgt_out[row, : len(output) + 1] = torch.tensor([*output, ids.eos])
    keep = torch.arange(width, device=src.device)[None, :] < lengths[:, None]  # (G, T)
    members = members_of(model)
    total: Tensor | None = None
    for member in members:
        logprobs = torch.log_softmax(member(src, tgt_in, output_keep=keep).float(), dim=-1)  # (M, V)
        total = logprobs if total is None else total.add_(logprobs)
    chosen = total.div_(len(members)).gather(1, tgt_out[keep][:, None]).squeeze(1)  # type: ignore[union-attr]
    return [values.tolist() for values in chosen.split(lengths.tolist())]


__all__ = ["MAX_LOGITS", "score_outputs_"]

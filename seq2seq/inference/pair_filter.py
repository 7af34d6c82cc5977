"""A cleaning transform that asks a trained translation model whether a pair's target translates its source.

Misaligned pairs (a target that belongs to another sentence) look like clean text on both sides, so no
rule catches them; a model does: it gives such a target a low probability. Scores are length-normalised
log-probabilities by teacher forcing (one forward pass per batch): the mean over the target's tokens and
its final eos, in nats. Two methods:

  conditional   log p(target | source): 0 is certain, -2 means e^-2 per token on average. With a reverse
                model, "dual conditional cross-entropy" (Junczys-Dowmunt, 2018): the mean of both
                directions' scores minus their difference, so a pair must be likely both ways, alike.
  contrastive   log p(target | source) - log p(target | empty source): how much the source helps the
                model predict the target. A hard but correct target (rare names, a long verse) has a low
                probability, but a far lower one without its source, so its contrast stays high; a
                fluent target of another sentence gains nothing from this source. With a reverse model,
                the mean of the two directions' contrasts (their scales differ, so dual's difference
                term would punish clean pairs). It costs a second decoder pass per direction.

It implements seq2seq.data.transforms' Transform but lives in the inference layer, because it loads a
model and seq2seq.data sits below every model-loading module. Configure it like the others in
`data.transforms`: `{_target_: seq2seq.inference.pair_filter.TranslationScoreFilter,
checkpoint: runs/x/best.pt, min_score: 0.5}`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.data.binarize import file_digest
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.data.transforms import Pair, Result, Transform
from seq2seq.decode.search import length_sorted_batches, pad_batch
from seq2seq.errors import UserError
from seq2seq.inference.loading import LoadedModel, load_ensemble
from seq2seq.model.families import DECODER_ONLY

log = logging.getLogger(__name__)


@torch.inference_mode()
def mean_log_probs(
    model: nn.Module, sources: Sequence[list[int]], targets: Sequence[list[int]], *, bos_id: int, pad_id: int,
    device: torch.device, max_tokens: int = 4096,
) -> list[float]:  # fmt: skip
    """Per pair, the mean log-probability of the target's tokens (each list ending in eos) given the source,
    by teacher forcing: batches of similar length within `max_tokens` (sentences x longest side)."""
    scores = [0.0] * len(sources)
    lengths = [max(len(s), len(t)) for s, t in zip(sources, targets)]
    for batch in length_sorted_batches(lengths, max_tokens):
        src = pad_batch([sources[i] for i in batch], pad_id).to(device)  # (B, S)
        tgt_out = pad_batch([targets[i] for i in batch], pad_id).to(device)  # (B, T)
        tgt_in = pad_batch([[bos_id, *targets[i][:-1]] for i in batch], pad_id).to(device)  # (B, T)
        keep = tgt_out != pad_id  # (B, T)
        logits = model(src, tgt_in, output_keep=keep)  # (N, V), the kept positions in row-major order
        token_scores = torch.log_softmax(logits.float(), dim=-1).gather(1, tgt_out[keep][:, None])[
            :, 0
        ]  # (N,)
        rows = keep.nonzero()[:, 0]  # (N,) the row of each kept position
        sums = torch.zeros(len(batch), device=device).index_add_(0, rows, token_scores)  # (B,)
        for index, value in zip(batch, (sums / keep.sum(dim=1)).tolist()):
            scores[index] = value
    return scores


def dual_score(forward: float, backward: float) -> float:
    """Dual conditional cross-entropy as a score (higher is better): with H = -score per direction,
    -(|H_f - H_b| + (H_f + H_b) / 2) = (forward + backward) / 2 - |forward - backward|."""
    return (forward + backward) / 2 - abs(forward - backward)


METHODS = ("conditional", "contrastive")


def combined(forward: float, backward: float, method: str) -> float:
    """Both directions' scores as one: dual for conditional, the mean for contrastive (module docstring)."""
    return dual_score(forward, backward) if method == "conditional" else (forward + backward) / 2


class TranslationScoreFilter(Transform):
    """Remove pairs whose score (module docstring) is below `min_score`.

    `checkpoint`: a source->target translation model (seq2seq-train's best.pt or averaged.pt);
    `reverse_checkpoint`: optionally a target->source one as well. Both are loaded on first use.
    `method`: "contrastive" or "conditional". `max_tokens`: the batch budget (sentences x longest side).
    A side longer than the model's positions is scored on its first tokens.
    """

    name = "TranslationScore"

    def __init__(
        self, *, checkpoint: str, min_score: float = 0.5, method: str = "contrastive",
        reverse_checkpoint: str | None = None, device: str = "cpu", max_tokens: int = 4096,
    ) -> None:  # fmt: skip
        if method not in METHODS:
            raise UserError(f"TranslationScoreFilter method={method!r} is not one of {', '.join(METHODS)}")
        self.paths = [Path(p) for p in (checkpoint, reverse_checkpoint) if p is not None]
        for path in self.paths:
            if not path.is_file():
                raise UserError(
                    f"TranslationScoreFilter: {path} is not a file; pass a checkpoint of seq2seq-train"
                )
        self.min_score, self.method = float(min_score), method
        self.device, self.max_tokens = torch.device(device), max_tokens
        self._models: list[LoadedModel] = []

    def settings(self) -> dict[str, Any]:
        """The models by content (a moved file is the same model), the method and the threshold."""
        digests = [file_digest(path) for path in self.paths]
        return {"checkpoint_sha256": digests[0], "reverse_sha256": digests[1] if len(digests) > 1 else None,
                "method": self.method, "min_score": self.min_score}  # fmt: skip

    def models(self) -> list[LoadedModel]:
        """The forward model, then the reverse one if any: loaded once."""
        if not self._models:
            self._models = [load_ensemble([path], self.device) for path in self.paths]
            for path, loaded in zip(self.paths, self._models):
                log.info("TranslationScoreFilter: scoring with %s (step %d)", path, loaded.step)
        return self._models

    def log_probs(self, loaded: LoadedModel, sources: Sequence[str], targets: Sequence[str]) -> list[float]:
        """Mean log-probability of each target given its source under one model."""
        limit = loaded.model.max_positions
        joint = loaded.model.family == DECODER_ONLY  # source and target share positions
        src_ids = _with_eos(loaded.src_tokenizer, sources, limit // 2 if joint else limit)
        tgt_ids = [
            _fitted(ids, (limit - len(src)) if joint else limit, loaded.tgt_tokenizer.eos_id)
            for src, ids in zip(src_ids, _with_eos(loaded.tgt_tokenizer, targets, limit))
        ]
        ids = loaded.tgt_tokenizer
        return mean_log_probs(loaded.model, src_ids, tgt_ids, bos_id=ids.bos_id, pad_id=ids.pad_id,
                              device=self.device, max_tokens=self.max_tokens)  # fmt: skip

    def direction_scores(
        self, loaded: LoadedModel, sources: Sequence[str], targets: Sequence[str]
    ) -> list[float]:
        """One model's score of each pair: conditional, or its contrast with an empty source."""
        conditional = self.log_probs(loaded, sources, targets)
        if self.method == "conditional":
            return conditional
        unconditional = self.log_probs(loaded, [""] * len(targets), targets)
        return [c - u for c, u in zip(conditional, unconditional)]

    def scores(self, pairs: Sequence[Pair]) -> list[float]:
        """The score of each pair: the forward model's, or both directions' combined."""
        sources, targets = [p[0] for p in pairs], [p[1] for p in pairs]
        models = self.models()
        forward = self.direction_scores(models[0], sources, targets)
        if len(models) == 1:
            return forward
        backward = self.direction_scores(models[1], targets, sources)
        return [combined(f, b, self.method) for f, b in zip(forward, backward)]

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        if not pairs:
            return []
        return [p if score >= self.min_score else None for p, score in zip(pairs, self.scores(pairs))]


def _with_eos(tokenizer: TextTokenizer, texts: Sequence[str], limit: int) -> list[list[int]]:
    return [
        _fitted(ids + [tokenizer.eos_id], limit, tokenizer.eos_id) for ids in tokenizer.encode_batch(texts)
    ]


def _fitted(ids: list[int], limit: int, eos_id: int) -> list[int]:
    """`ids` (ending in eos) cut to `limit` tokens, still ending in eos."""
    return ids if len(ids) <= limit else ids[: limit - 1] + [eos_id]

"""What training a QE model needs: the encoded corpus, token-budget batches, the loss and validation.

The loss is the squared error between the model's sigmoid output and the label (seq2seq.qe.labels),
summed over the batch's pairs; an update divides it by the number of pairs (the trainer's
`n_tgt_tokens` of a QE batch), so the reported loss is the mean squared error. Validation reports the
dev loss and the Pearson and Spearman correlations of the predictions with the labels; best.pt follows
the dev loss (the trainer keeps the lowest).

The corpus is tokenized in memory when the run starts: a QE corpus is a few passes over a parallel
corpus's sentences, small next to the token arrays of the corpus itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.precision import autocast
from seq2seq.qe.corpus import QECorpus
from seq2seq.qe.correlation import pearson, spearman
from seq2seq.data.qe_pairs import encode_pairs, pad_rows
from seq2seq.train.loss import LossOutput

log = logging.getLogger(__name__)


@dataclass
class QEBatch:
    """Shapes: src (B, S), hyp (B, T) right-padded, ending in eos; labels (B,) in [0, 1]."""

    src: Tensor
    hyp: Tensor
    labels: Tensor
    indices: list[int] = field(default_factory=list)

    @property
    def n_tgt_tokens(self) -> int:
        """What the trainer divides an update's loss by: here, the pairs."""
        return int(self.labels.shape[0])

    def to(self, device: torch.device | str) -> QEBatch:
        return QEBatch(self.src.to(device), self.hyp.to(device), self.labels.to(device), self.indices)

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@dataclass
class QEDataset:
    """A QE corpus tokenized: per pair, source and translation ids (eos included) and the label."""

    sources: list[list[int]]
    translations: list[list[int]]
    labels: np.ndarray  # (N,) float32

    @classmethod
    def encode(
        cls, corpus: QECorpus, src_tokenizer: TextTokenizer, tgt_tokenizer: TextTokenizer, *,
        max_positions: int, name: str,
    ) -> QEDataset:  # fmt: skip
        encoded = encode_pairs(src_tokenizer, tgt_tokenizer, corpus.sources, corpus.translations,
                               max_positions=max_positions)  # fmt: skip
        if encoded.truncated:
            log.info("%s: %d pair(s) truncated to the model's %d positions", name, encoded.truncated,
                     max_positions)  # fmt: skip
        return cls(encoded.sources, encoded.translations, np.asarray(corpus.labels, dtype=np.float32))

    def __len__(self) -> int:
        return len(self.sources)

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([len(s) for s in self.sources], dtype=np.int32),
                np.array([len(t) for t in self.translations], dtype=np.int32))  # fmt: skip

    def sampler(
        self, max_tokens: int, *, seed: int, shuffle: bool, rank: int = 0, world_size: int = 1
    ) -> Any:
        """Token-budget batches; a pair costs its source and translation together (one sequence)."""
        src_lengths, hyp_lengths = self.lengths()
        return TokenBatchSampler(src_lengths, hyp_lengths, max_tokens, seed=seed, shuffle=shuffle, rank=rank,
                                 world_size=world_size, joint_sequence=True)  # fmt: skip

    def batch(self, indices: list[int], pad_id: int) -> QEBatch:
        return QEBatch(
            src=pad_rows([self.sources[i] for i in indices], pad_id),
            hyp=pad_rows([self.translations[i] for i in indices], pad_id),
            labels=torch.from_numpy(self.labels[list(indices)]),
            indices=[int(i) for i in indices],
        )


def squared_error(predicted: Tensor, labels: Tensor) -> LossOutput:
    """Summed squared error. Shapes: predicted, labels (B,) -> LossOutput (sums over B)."""
    error = (predicted.float() - labels.float()).pow(2).sum()
    return LossOutput(error, error.detach(), torch.tensor(labels.shape[0], device=labels.device))


def qe_batch_loss(model: nn.Module, batch: QEBatch, loss_fn: Any, *, pad_id: int) -> LossOutput:
    """The trainer's objective for a QE batch (the counterpart of seq2seq.train.objective.batch_loss)."""
    del pad_id  # the model derives its masks from its own pad_id
    predicted = torch.sigmoid(model(batch.src, batch.hyp)[:, 0])  # (B,)
    return loss_fn(predicted, batch.labels)


class QEValidator:
    """Dev loss and correlations; called by the trainer as validate(model, step)."""

    def __init__(
        self, dev: QEDataset, *, pad_id: int, max_tokens: int, device: torch.device, precision: str
    ) -> None:
        self.dev, self.pad_id, self.device, self.precision = dev, pad_id, device, precision
        self.batches = dev.sampler(max_tokens, seed=0, shuffle=False).batches(0)

    @torch.no_grad()
    def __call__(self, model: nn.Module, step: int) -> dict[str, Any]:
        was_training = model.training
        model.eval()
        predicted = np.zeros(len(self.dev), dtype=np.float64)
        for indices in self.batches:
            batch = self.dev.batch(indices, self.pad_id).to(self.device)
            with autocast(self.precision, self.device):
                values = torch.sigmoid(model(batch.src, batch.hyp)[:, 0].float())
            predicted[indices] = values.cpu().numpy()
        model.train(was_training)
        labels = self.dev.labels.astype(np.float64)
        return {
            "loss": float(((predicted - labels) ** 2).mean()),
            "pearson": pearson(predicted, labels),
            "spearman": spearman(predicted, labels),
        }


__all__ = ["QEBatch", "QEDataset", "QEValidator", "qe_batch_loss", "squared_error"]

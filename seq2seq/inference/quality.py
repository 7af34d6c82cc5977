"""QualityEstimator: a trained encoder-only checkpoint (seq2seq-qe-train) that scores (source,
translation) pairs: a Translator's qe_checkpoint, and seq2seq-qe's model.

    from seq2seq.qe import QualityEstimator

    qe = QualityEstimator.from_checkpoint("runs/qe/best.pt")
    qe.score(["In the beginning..."], ["En el principio..."])   # [0.61]: the predicted chrF / 100

A score is the model's estimate of the translation's sentence-level label (chrF / 100 by default:
seq2seq.qe.labels), in [0, 1]. A pair with an empty side gets None.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch

from seq2seq.data.qe_pairs import EncodedPairs, encode_pairs, pad_rows
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.search import length_sorted_batches
from seq2seq.devices import pick_device
from seq2seq.errors import UserError
from seq2seq.inference.loading import load_for_inference
from seq2seq.model.encoder_only import EncoderOnly
from seq2seq.model.families import ENCODER_ONLY
from seq2seq.precision import autocast, check_precision, resolve_precision

log = logging.getLogger(__name__)


class QualityEstimator:
    """An encoder-only model and the tokenizers of the translation model whose outputs it scores."""

    def __init__(
        self,
        model: EncoderOnly,
        src_tokenizer: TextTokenizer,
        tgt_tokenizer: TextTokenizer,
        *,
        device: torch.device,
        precision: str = "fp32",
        label: str = "chrf",
    ) -> None:
        self.model, self.device, self.precision, self.label = (
            model.to(device).eval(),
            device,
            precision,
            label,
        )
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer

    @classmethod
    def from_checkpoint(
        cls, path: str | Path, *, device: str | torch.device = "auto", precision: str = "fp32"
    ) -> QualityEstimator:
        """A checkpoint written by seq2seq-qe-train (an encoder-only model); any other is a one-line error.
        `device`: auto (a GPU when CUDA has one, else the CPU) | cpu | cuda | cuda:N, as everywhere."""
        check_precision(precision)
        device = device if isinstance(device, torch.device) else pick_device(str(device))
        precision = resolve_precision(precision, device, key="precision")
        path = Path(path)
        if not path.is_file():
            raise UserError(f"QE checkpoint {path} does not exist; train one with seq2seq-qe-train")
        loaded = load_for_inference(path, torch.device(device))
        family = loaded.model.family
        if family != ENCODER_ONLY:
            raise UserError(f"{path} holds a translation model ({family}), not a quality-estimation model; "
                            "pass a checkpoint written by seq2seq-qe-train")  # fmt: skip
        label = str((loaded.config.get("qe") or {}).get("metric", "chrf"))
        return cls(loaded.model, loaded.src_tokenizer, loaded.tgt_tokenizer, device=torch.device(device),
                   precision=precision, label=label)  # fmt: skip

    @property
    def max_positions(self) -> int:
        return self.model.max_positions

    def encode(self, sources: Sequence[str], translations: Sequence[str]) -> EncodedPairs:
        if len(sources) != len(translations):
            raise UserError(f"{len(sources)} sources but {len(translations)} translations; pass one each")
        encoded = encode_pairs(self.src_tokenizer, self.tgt_tokenizer, sources, translations,
                               max_positions=self.max_positions)  # fmt: skip
        if encoded.truncated:
            log.warning("%d pair(s) longer than the model's %d positions were truncated", encoded.truncated,
                        self.max_positions)  # fmt: skip
        return encoded

    @torch.inference_mode()
    def score(
        self, sources: Sequence[str], translations: Sequence[str], *, max_tokens: int = 8192
    ) -> list[float | None]:
        """The estimated quality of each translation of its source, in [0, 1]; None for an empty pair."""
        return self.score_encoded(self.encode(sources, translations), max_tokens=max_tokens)

    @torch.inference_mode()
    def score_encoded(self, encoded: EncodedPairs, *, max_tokens: int = 8192) -> list[float | None]:
        scores: list[float | None] = [None] * len(encoded.sources)
        todo = [i for i, source in enumerate(encoded.sources) if source]
        lengths = [len(encoded.sources[i]) + len(encoded.translations[i]) for i in todo]
        pad_id = self.src_tokenizer.pad_id
        for batch in length_sorted_batches(lengths, max_tokens):
            rows = [todo[i] for i in batch]
            src = pad_rows([encoded.sources[i] for i in rows], pad_id).to(self.device)  # (B, S)
            hyp = pad_rows([encoded.translations[i] for i in rows], pad_id).to(self.device)  # (B, T)
            with autocast(self.precision, self.device):
                predicted = torch.sigmoid(self.model(src, hyp)[:, 0].float())  # (B,)
            for row, value in zip(rows, predicted.tolist()):
                scores[row] = value
        return scores


__all__ = ["QualityEstimator"]

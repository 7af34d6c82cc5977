"""Validation during training: dev loss and perplexity, dev BLEU/chrF from real decoding, samples,
and a cross-attention picture of one fixed dev sentence."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

import sacrebleu
import torch
from torch import nn

from seq2seq.decode.attention_plot import attention_figure, column_labels
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import best_tokens, pad_batch, search_ids
from seq2seq.model.transformer import Seq2Seq
from seq2seq.precision import autocast
from seq2seq.train.objective import batch_loss

log = logging.getLogger(__name__)


def evenly_spaced(total: int, count: int | None) -> list[int]:
    """`count` indices spread evenly over range(total) (all of them when count is None or larger)."""
    if count is None or count >= total:
        return list(range(total))
    return [round(i * (total - 1) / max(count - 1, 1)) for i in range(count)]


class Validator:
    """Callable(model, step) -> metrics dict; holds the dev data and how to decode it."""

    def __init__(
        self,
        *,
        dev: Any,
        dev_batches: list[list[int]],
        make_batch: Callable[[list[int]], Any],
        dev_src_texts: list[str],
        dev_ref_texts: list[str],
        src_tokenizer: Any,
        tgt_tokenizer: Any,
        loss_fn: Callable[..., Any],
        device: torch.device,
        precision: str,
        search: SearchOptions,
        max_tokens: int,
        compute_bleu: bool = True,
        max_sentences: int | None = None,
        n_samples: int = 3,
        attention_plot: bool = True,
    ) -> None:
        self.dev, self.dev_batches, self.make_batch = dev, dev_batches, make_batch
        self.src_texts, self.ref_texts = dev_src_texts, dev_ref_texts
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        self.loss_fn, self.device, self.precision = loss_fn, device, precision
        self.search, self.max_tokens = search, max_tokens
        self.compute_bleu, self.max_sentences = compute_bleu, max_sentences
        self.n_samples, self.attention_plot = n_samples, attention_plot

    @torch.inference_mode()
    def dev_loss(self, model: nn.Module) -> dict[str, float]:
        model.eval()
        loss = nll = tokens = 0.0
        for indices in self.dev_batches:
            batch = self.make_batch(indices).to(self.device)
            with autocast(self.precision, self.device):
                out = batch_loss(model, batch, self.loss_fn, pad_id=model.pad_id)
            loss, nll, tokens = (
                loss + float(out.loss_sum),
                nll + float(out.nll_sum),
                tokens + float(out.n_tokens),
            )
        mean_nll = nll / max(tokens, 1)
        return {"loss": loss / max(tokens, 1), "nll": mean_nll, "ppl": math.exp(min(mean_nll, 100.0))}

    def __call__(self, model: nn.Module, step: int, *, all_sentences: bool = False) -> dict[str, Any]:
        """Dev loss, and BLEU/chrF on `max_sentences` dev sentences (on every one with `all_sentences`)."""
        start = time.perf_counter()
        metrics: dict[str, Any] = self.dev_loss(model)
        if self.compute_bleu:
            metrics.update(self.dev_bleu(model, all_sentences=all_sentences))
        metrics["seconds"] = time.perf_counter() - start
        return metrics

    @property
    def target_prefix(self) -> list[int]:
        """The target tokens every search forces first, as the Translator's do: a multilingual model's
        target language code (its target tokenizer's prefix; seq2seq.inference.languages), else []."""
        tokenizer = self.tgt_tokenizer
        return list(tokenizer.prefix)

    def dev_bleu(self, model: nn.Module, *, all_sentences: bool = False) -> dict[str, Any]:
        chosen = evenly_spaced(len(self.src_texts), None if all_sentences else self.max_sentences)
        sources = [self.dev[i][0].tolist() for i in chosen]  # token ids ending in eos
        tokenizer, prefix = self.tgt_tokenizer, self.target_prefix
        results = search_ids(
            model,
            sources,
            options=self.search,
            ids=SpecialIds.of(tokenizer),
            device=self.device,
            max_tokens=self.max_tokens,
            precision=self.precision,
            prefixes=[prefix] * len(sources) if prefix else None,
        )
        hypotheses = [tokenizer.decode(tokens) for tokens in best_tokens(results)]
        references = [self.ref_texts[i] for i in chosen]
        source_texts = [self.src_texts[i] for i in chosen]
        bleu = sacrebleu.metrics.BLEU()
        chrf = sacrebleu.metrics.CHRF()
        bleu_score = bleu.corpus_score(hypotheses, [references])
        chrf_score = chrf.corpus_score(hypotheses, [references])
        metrics: dict[str, Any] = {
            "bleu": bleu_score.score,
            "chrf": chrf_score.score,
            "signature": f"{bleu.get_signature()} | {chrf.get_signature()}",
            "samples": [
                {"src": source_texts[i], "ref": references[i], "hyp": hypotheses[i]}
                for i in range(min(self.n_samples, len(chosen)))
            ],
        }
        if self.attention_plot and chosen:
            metrics["attention_figure"] = self._attention_figure(
                model, sources[0], best_tokens(results)[0], title=source_texts[0][:80]
            )
        return metrics

    def _attention_figure(self, model: Seq2Seq, source: list[int], hypothesis: list[int], title: str) -> Any:
        tokenizer = self.tgt_tokenizer
        src = pad_batch([source], tokenizer.pad_id).to(self.device)  # (1, S)
        tgt_in = pad_batch([[tokenizer.bos_id] + hypothesis], tokenizer.pad_id).to(self.device)  # (1, T)
        weights = model.cross_attention(src, tgt_in)[0].mean(0)  # (T, S')
        stride = model.memory_stride
        src_pieces = column_labels([self.src_tokenizer.id_to_piece(i) for i in source], stride)
        tgt_pieces = [tokenizer.id_to_piece(i) for i in hypothesis] + ["</s>"]
        return attention_figure(weights, src_pieces, tgt_pieces, title=title)

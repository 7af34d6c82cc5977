"""Validation during training: dev loss and perplexity, dev BLEU/chrF from real decoding, samples,
and a cross-attention picture of one fixed dev sentence.

A multilingual run's dev set holds one dev set per direction (DevDirection): each is decoded with its
target language's token forced, scored on its own (`bleu_en-es`, `chrf_en-es`), and `bleu`/`chrf` are
the unweighted means over the directions, so the run's objective, best.pt and the final choice weigh
every direction alike, whatever its size."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sacrebleu
import torch
from torch import nn

from seq2seq.attention_pictures import attention_figure, column_labels
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import best_tokens, pad_batch, search_ids
from seq2seq.model.transformer import Seq2Seq
from seq2seq.precision import autocast
from seq2seq.train.objective import batch_loss

# Source tokens per dev-decoding batch, at the least: a training batch is sized for what backward can
# hold, a decoding batch only for the search, and on a CPU bigger ones decode faster
# (benchmarks/train_overheads.py), which gives a short run's budget back to its updates.
MIN_DECODE_TOKENS = 8192

log = logging.getLogger(__name__)


def evenly_spaced(total: int, count: int | None) -> list[int]:
    """`count` indices spread evenly over range(total) (all of them when count is None or larger)."""
    if count is None or count >= total:
        return list(range(total))
    return [round(i * (total - 1) / max(count - 1, 1)) for i in range(count)]


@dataclass(frozen=True)
class DevDirection:
    """One direction of a multilingual dev set: its name, its pairs' indices and the target tokens every
    search forces first (its target language's token)."""

    name: str  # "en-es"
    indices: range  # its pairs in the dev dataset
    prefix: tuple[int, ...]


def direction_key(metric: str, direction: str) -> str:
    """The metrics key of one direction's score: bleu_en-es (log, TensorBoard valid/bleu_en-es, history)."""
    return f"{metric}_{direction}"


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
        directions: Sequence[DevDirection] = (),
    ) -> None:
        """`max_tokens`: the run's batch size; dev decoding (here and in tune_decoding) batches at least
        MIN_DECODE_TOKENS source tokens. `directions`: a multilingual dev set's (each scored alone, the
        means are `bleu`/`chrf`); empty: one dev set, whose forced target tokens are the target
        tokenizer's prefix."""
        self.dev, self.dev_batches, self.make_batch = dev, dev_batches, make_batch
        self.src_texts, self.ref_texts = dev_src_texts, dev_ref_texts
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        self.loss_fn, self.device, self.precision = loss_fn, device, precision
        self.search, self.max_tokens = search, max(max_tokens, MIN_DECODE_TOKENS)
        self.compute_bleu, self.max_sentences = compute_bleu, max_sentences
        self.n_samples, self.attention_plot = n_samples, attention_plot
        self.directions = list(directions)

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
        """The target tokens every search of a one-direction dev set forces first, as the Translator's do: a
        multilingual model's target language code (its target tokenizer's prefix), else []."""
        return list(self.tgt_tokenizer.prefix)

    def prefix_of(self, index: int) -> list[int]:
        """The target tokens forced first when dev pair `index` is decoded: its direction's target token."""
        for direction in self.directions:
            if index in direction.indices:
                return list(direction.prefix)
        return self.target_prefix

    def chosen_sentences(self, count: int | None) -> list[int]:
        """`count` dev pairs spread evenly over the dev set (all with None); with several directions, an
        even share of `count` spread over each direction, so every direction is scored."""
        if not self.directions:
            return evenly_spaced(len(self.src_texts), count)
        share = None if count is None else max(1, count // len(self.directions))
        return [d.indices[i] for d in self.directions for i in evenly_spaced(len(d.indices), share)]

    def dev_bleu(self, model: nn.Module, *, all_sentences: bool = False) -> dict[str, Any]:
        chosen = self.chosen_sentences(None if all_sentences else self.max_sentences)
        sources = [self.dev[i][0].tolist() for i in chosen]  # token ids ending in eos
        prefixes = [self.prefix_of(i) for i in chosen]
        tokenizer = self.tgt_tokenizer
        results = search_ids(
            model,
            sources,
            options=self.search,
            ids=SpecialIds.of(tokenizer),
            device=self.device,
            max_tokens=self.max_tokens,
            precision=self.precision,
            prefixes=prefixes if any(prefixes) else None,
        )
        hypotheses = [tokenizer.decode(tokens) for tokens in best_tokens(results)]
        references = [self.ref_texts[i] for i in chosen]
        source_texts = [self.src_texts[i] for i in chosen]
        bleu = sacrebleu.metrics.BLEU()
        chrf = sacrebleu.metrics.CHRF()
        metrics: dict[str, Any] = {}
        if self.directions:
            for direction in self.directions:
                mine = [n for n, i in enumerate(chosen) if i in direction.indices]
                hyps, refs = [hypotheses[n] for n in mine], [[references[n] for n in mine]]
                metrics[direction_key("bleu", direction.name)] = bleu.corpus_score(hyps, refs).score
                metrics[direction_key("chrf", direction.name)] = chrf.corpus_score(hyps, refs).score
            names = [direction.name for direction in self.directions]
            metrics = {  # the means first: what the log line and the objective lead with
                "bleu": sum(metrics[direction_key("bleu", n)] for n in names) / len(names),
                "chrf": sum(metrics[direction_key("chrf", n)] for n in names) / len(names),
                **metrics,
            }
            shown = evenly_spaced(len(chosen), self.n_samples)  # samples from every direction
        else:
            metrics["bleu"] = bleu.corpus_score(hypotheses, [references]).score
            metrics["chrf"] = chrf.corpus_score(hypotheses, [references]).score
            shown = list(range(min(self.n_samples, len(chosen))))
        metrics["signature"] = f"{bleu.get_signature()} | {chrf.get_signature()}"
        metrics["samples"] = [
            {"src": source_texts[i], "ref": references[i], "hyp": hypotheses[i]} for i in shown
        ]
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

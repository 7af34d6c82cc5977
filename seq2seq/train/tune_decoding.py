"""Decoding settings tuned on dev data at the end of training (`trainer.tune_decoding`): the length
penalty, and max_len_a when outputs run into the length limit, for the search translation uses by default
(the Translator's DEFAULT_OPTIONS: configs/decode/beam.yaml's beam 5).

Cheap by construction. One beam search over an evenly spaced sample of dev sentences keeps every finished
hypothesis. With `stop_early` (beam.yaml's), which hypotheses finish does not depend on the length penalty,
so re-ranking them under each candidate penalty gives exactly what a search with that penalty returns:
31 penalties for the price of one search. A second search, with max_len_a 1.5 times larger, runs only when
at least 1% of the best outputs stop at the length limit. (Without stop_early the penalty also decides
when a sentence is done, so the winner is confirmed by one real search.)

Not by noise: a few hundred sentences leave BLEU differences of a few tenths to chance, and picking the
best of 31 penalties favours a lucky one. The defaults are kept unless the best candidate beats them in
at least 95% of 1,000 paired bootstrap resamples of the sample (the same sentences drawn for both).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sacrebleu.metrics import BLEU

from seq2seq.decode.beam import beam_search
from seq2seq.decode.hypotheses import Hypothesis, SpecialIds
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.decode.penalties import length_penalty, max_output_lengths
from seq2seq.decode.search import length_sorted_batches, pad_batch, search_ids
from seq2seq.decode.searchable import SearchableModel
from seq2seq.precision import autocast
from seq2seq.train.validation import Validator

log = logging.getLogger(__name__)

PENALTIES = tuple(round(0.1 * i, 1) for i in range(31))  # GNMT alpha 0.0, 0.1, ..., 3.0
LIMIT_SHARE = 0.01  # a wider length limit is searched when this share of the best outputs hit the limit
WIDER_LIMIT = 1.5  # ... with max_len_a this many times larger
RESAMPLES, CONFIDENCE = 1000, 0.95
Candidate = tuple[float, float]  # (length_penalty, max_len_a)


def tune_decoding(
    model: SearchableModel,
    validator: Validator,
    *,
    sentences: int | None,
    base: SearchOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """The tuned values and what they were chosen on (the `decoding` record a checkpoint stores)."""
    start = time.perf_counter()
    sample = validator.chosen_sentences(sentences)  # with several dev directions, a share of each
    sources = [validator.dev[i][0].tolist() for i in sample]  # token ids ending in eos
    prefixes = [validator.prefix_of(i) for i in sample]  # a multilingual model's target token, forced
    scorer = _Scorer([validator.ref_texts[i] for i in sample], validator.tgt_tokenizer)
    default: Candidate = (base.length_penalty, base.max_len_a)
    found = {base.max_len_a: finished_hypotheses(model, validator, sources, base, prefixes)}
    table = scorer.table(found)
    best = _best(table, default)
    limit_share = _share_at_limit(found[best[1]], best[0], sources, base, model.max_positions - 1)
    if limit_share >= LIMIT_SHARE:
        wider = round(base.max_len_a * WIDER_LIMIT, 2)
        found[wider] = finished_hypotheses(model, validator, sources, base.replace(max_len_a=wider), prefixes)
        table.update(scorer.table({wider: found[wider]}))
        best = _best(table, default)
    confirm = not base.stop_early and best != default  # re-ranking is then an approximation
    if confirm:
        table[best] = scorer.stats(real_search(model, validator, sources, _options(base, best), prefixes))
    record = _decision(table, best, default)
    limit = record["values"]["max_len_a"]
    record.update(
        sentences=len(sample), dev_sentences=len(validator.src_texts), beam_size=base.beam_size,
        max_len_b=base.max_len_b, searches=len(found) + confirm, limit_share=limit_share,
        exact=base.stop_early, seconds=time.perf_counter() - start,
        penalties={str(p): round(_Scorer.bleu_of(table[(p, limit)]), 2) for p in PENALTIES},
    )  # fmt: skip
    return record


def real_search(
    model: SearchableModel, validator: Validator, sources: list[list[int]], options: SearchOptions,
    prefixes: list[list[int]],
) -> list[Hypothesis | None]:
    """The first hypothesis per source of an ordinary search with `options`, each source's `prefixes`
    (a multilingual model's target language token; [] for none) forced first."""
    results = search_ids(
        model, sources, options=options, ids=SpecialIds.of(validator.tgt_tokenizer), device=validator.device,
        max_tokens=validator.max_tokens, precision=validator.precision,
        prefixes=prefixes if any(prefixes) else None,
    )  # fmt: skip
    return [nbest[0] if nbest else None for nbest in results]


@torch.inference_mode()
def finished_hypotheses(
    model: SearchableModel, validator: Validator, sources: list[list[int]], options: SearchOptions,
    prefixes: list[list[int]],
) -> list[list[Hypothesis]]:
    """Every finished hypothesis of a beam search over `sources` (in order), batched by token budget; a
    batch holds sources of one forced prefix (`prefixes`, one per source: beam_search forces one)."""
    model.eval()
    ids = SpecialIds.of(validator.tgt_tokenizer)
    results: list[list[Hypothesis]] = [[] for _ in sources]
    groups: dict[tuple[int, ...], list[int]] = {}
    for index, prefix in enumerate(prefixes):
        groups.setdefault(tuple(prefix), []).append(index)
    for prefix, members in groups.items():
        for batch in length_sorted_batches([len(sources[i]) for i in members], validator.max_tokens):
            chosen = [members[i] for i in batch]
            src = pad_batch([sources[i] for i in chosen], ids.pad).to(validator.device)  # (B, S)
            with autocast(validator.precision, validator.device):
                found = beam_search(
                    model, src, options, ids=ids, all_finished=True, prefix=list(prefix) or None
                )
            for index, hypotheses in zip(chosen, found):
                results[index] = hypotheses
    return results


def rerank(found: Sequence[list[Hypothesis]], alpha: float) -> list[Hypothesis | None]:
    """Per sentence, the hypothesis a search with length penalty `alpha` returns first (None: none)."""

    def score(hypothesis: Hypothesis) -> float:  # as decode.hypotheses.finished_hypothesis does
        return hypothesis.log_prob / float(length_penalty(len(hypothesis.tokens) + 1, alpha))

    return [max(hyps, key=score) if hyps else None for hyps in found]


def _options(base: SearchOptions, candidate: Candidate) -> SearchOptions:
    return base.replace(length_penalty=candidate[0], max_len_a=candidate[1])


def _best(table: dict[Candidate, np.ndarray], default: Candidate) -> Candidate:
    """The highest BLEU; among equals the default limit, then the penalty closest to the default's."""
    return max(
        table,
        key=lambda c: (_Scorer.bleu_of(table[c]), c[1] == default[1], -abs(c[0] - default[0])),
    )


def _share_at_limit(
    found: list[list[Hypothesis]], alpha: float, sources: list[list[int]], base: SearchOptions,
    longest: int,
) -> float:  # fmt: skip
    """The share of sentences whose best output (under `alpha`) stops at the length limit; `longest`: the
    output tokens the model's positions hold (max_positions - 1)."""
    limits = max_output_lengths(torch.tensor([len(s) for s in sources]), a=base.max_len_a, b=base.max_len_b)
    limits = limits.clamp(max=longest)
    at_limit = [h is not None and len(h.tokens) >= n for h, n in zip(rerank(found, alpha), limits.tolist())]
    return sum(at_limit) / max(len(at_limit), 1)


def _decision(table: dict[Candidate, np.ndarray], best: Candidate, default: Candidate) -> dict[str, Any]:
    """The best candidate if it beats the defaults in CONFIDENCE of the bootstrap resamples, else the
    defaults; with the scores of both and of the best other candidate."""
    bleu = {candidate: _Scorer.bleu_of(stats) for candidate, stats in table.items()}
    other = best if bleu[best] > bleu[default] else None  # the best, when it scores higher than the defaults
    wins = None if other is None else _bootstrap_wins(table[other], table[default])
    chosen = best != default and wins is not None and wins >= CONFIDENCE
    values = best if chosen else default

    def named(candidate: Candidate) -> dict[str, float]:
        return {"length_penalty": candidate[0], "max_len_a": candidate[1]}

    return {
        "values": named(values), "defaults": named(default), "chosen": chosen,
        "bleu": bleu[values], "default_bleu": bleu[default],
        "best_other": None if other is None or chosen else {
            "values": named(other), "bleu": bleu[other], "wins": wins,
        },
        "wins": wins if chosen else None, "confidence": CONFIDENCE, "resamples": RESAMPLES,
    }  # fmt: skip


def _bootstrap_wins(candidate: np.ndarray, default: np.ndarray, seed: int = 0) -> float:
    """The share of paired bootstrap resamples of the sentences in which `candidate` has the higher BLEU.

    Shapes: candidate, default (n, 10) per-sentence BLEU statistics."""
    n = len(candidate)
    counts = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=RESAMPLES)  # (R, n)
    ours, theirs = counts @ candidate, counts @ default  # (R, 10) each
    return float(np.mean([_Scorer.bleu_of(a) > _Scorer.bleu_of(b) for a, b in zip(ours, theirs)]))


class _Scorer:
    """sacreBLEU's per-sentence statistics of hypotheses against the sample's references (as validation
    scores: default BLEU settings), each (sentence, output) counted once; corpus BLEU adds them up."""

    def __init__(self, references: list[str], tokenizer: Any) -> None:
        self.references, self.tokenizer, self.metric = references, tokenizer, BLEU()
        self.cache: dict[tuple[int, tuple[int, ...]], list[int]] = {}

    def stats(self, picks: Sequence[Hypothesis | None]) -> np.ndarray:
        """Shapes: one hypothesis (or None: empty output) per sentence -> (n, 10)."""
        keys = [(i, tuple(h.tokens) if h is not None else ()) for i, h in enumerate(picks)]
        missing = list(dict.fromkeys(key for key in keys if key not in self.cache))
        if missing:
            texts = [self.tokenizer.decode(list(tokens)) for _, tokens in missing]
            rows = self.metric._extract_corpus_statistics(texts, [[self.references[i] for i, _ in missing]])
            self.cache.update(zip(missing, rows))
        return np.array([self.cache[key] for key in keys], dtype=np.int64)

    def table(self, found: dict[float, list[list[Hypothesis]]]) -> dict[Candidate, np.ndarray]:
        """Statistics of every (penalty, max_len_a) candidate, by re-ranking each search's hypotheses."""
        return {(p, a): self.stats(rerank(hyps, p)) for a, hyps in found.items() for p in PENALTIES}

    @staticmethod
    def bleu_of(stats: np.ndarray) -> float:
        """Corpus BLEU of summed statistics: (n, 10) per sentence or (10,) already summed."""
        total = stats.sum(axis=0) if stats.ndim == 2 else stats
        return BLEU.compute_bleu(
            correct=total[2:6].tolist(), total=total[6:10].tolist(), sys_len=int(total[0]),
            ref_len=int(total[1]), smooth_method="exp",
        ).score  # fmt: skip


def describe(record: dict[str, Any], checkpoint: str) -> str:
    """One log line: what was chosen, on what, at what cost."""
    values = ", ".join(f"{k}={v}" for k, v in record["values"].items())
    on = (f"{record['sentences']} dev sentences, beam {record['beam_size']}, "
          f"{record['searches']} search(es), {record['seconds']:.1f} s")  # fmt: skip
    if record["chosen"]:
        why = (f"{record['bleu']:.2f} vs {record['default_bleu']:.2f} BLEU with the defaults, better in "
               f"{record['wins']:.0%} of {record['resamples']} bootstrap resamples")  # fmt: skip
    elif record["best_other"] is None:
        why = "the defaults: no other values scored higher"
    else:
        other = record["best_other"]
        shown = ", ".join(f"{k}={v}" for k, v in other["values"].items())
        why = (f"the defaults ({record['default_bleu']:.2f} BLEU): the best other values ({shown}, "
               f"{other['bleu']:.2f}) win only {other['wins']:.0%} of {record['resamples']} bootstrap "
               f"resamples, not {record['confidence']:.0%}")  # fmt: skip
    return f"decoding tuned on {on}: {values}: {why}; stored in {checkpoint}"

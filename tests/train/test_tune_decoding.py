"""trainer.tune_decoding: re-ranking one search's finished hypotheses equals searching with each length
penalty; BLEU from per-sentence statistics equals sacreBLEU's; a clear gain changes the settings, a gain
within noise keeps the defaults; a wider length limit is searched only when outputs hit the limit."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import sacrebleu
import torch
from tiny_models import sentences, tiny_model, tiny_tokenizer
from torch import nn
from wrapped_model import Wrapped

from seq2seq.decode.beam import beam_search
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.decode.options import DEFAULT_OPTIONS
from seq2seq.decode.search import pad_batch
from seq2seq.train import tune_decoding as tuning_module
from seq2seq.train.tune_decoding import _Scorer, rerank, tune_decoding
from seq2seq.train.validation import evenly_spaced


class EosBias(Wrapped):
    """A random model made to end its outputs at many lengths (eos logit + `bias`), so that the length
    penalty changes which output wins."""

    def __init__(self, model: nn.Module, eos: int, bias: float) -> None:
        super().__init__(model)
        self.eos, self.bias = eos, bias

    def decode_step(self, tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        logits, state = self.model.decode_step(tokens, state)
        logits[:, self.eos] += self.bias
        return logits, state


@pytest.mark.slow
def test_reranking_the_finished_hypotheses_equals_searching_with_each_penalty() -> None:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, max_positions=128)
    model = EosBias(model, tokenizer.eos_id, bias=2.5).eval()
    src = pad_batch([tokenizer.encode(s) + [tokenizer.eos_id] for s in sentences(24, 1)], tokenizer.pad_id)
    options = DEFAULT_OPTIONS.replace(max_len_a=0.0, max_len_b=16)
    found = beam_search(model, src, options, all_finished=True)
    assert all(len(hyps) >= options.beam_size for hyps in found)  # every finished one, not just the best
    outputs = {}
    for alpha in (0.0, 0.6, 1.0, 2.0, 3.0):
        searched = beam_search(model, src, options.replace(length_penalty=alpha))
        outputs[alpha] = [nbest[0].tokens for nbest in searched]
        assert [h.tokens for h in rerank(found, alpha)] == outputs[alpha]
    # The penalty matters for these outputs, so the equality above has teeth.
    assert sum(a != b for a, b in zip(outputs[1.0], outputs[3.0])) >= 5


def test_bleu_from_sentence_statistics_equals_sacrebleu() -> None:
    references = sentences(30, 2)
    hypotheses = sentences(30, 3)
    scorer = _Scorer(references, SimpleNamespace(decode=lambda ids: hypotheses[ids[0]]))
    stats = scorer.stats([Hypothesis(tokens=[i], score=0.0, log_prob=0.0) for i in range(30)])
    assert _Scorer.bleu_of(stats) == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)


class Words:
    """A target tokenizer stand-in: token id k is the word wk."""

    @staticmethod
    def decode(ids: list[int]) -> str:
        return " ".join(f"w{i}" for i in ids)


def dev_set(count: int, *, source_length: int, reference_length: int) -> SimpleNamespace:
    """A Validator stand-in: `count` sources of `source_length` tokens, distinct reference words."""
    references = [[100 * i + j for j in range(reference_length)] for i in range(count)]
    return SimpleNamespace(
        src_texts=[""] * count, dev=[(torch.arange(source_length),) for _ in range(count)],
        ref_texts=[Words.decode(ref) for ref in references], tgt_tokenizer=Words, device=torch.device("cpu"),
        max_tokens=4096, precision="fp32", references=references,
        chosen_sentences=lambda sentences: evenly_spaced(count, sentences), prefix_of=lambda index: [],
    )  # fmt: skip


def short_and_full(reference: list[int], keep: int) -> list[Hypothesis]:
    """Per sentence: its first `keep` words, more likely, and the whole reference. The short one wins for
    length penalties up to 1.2 (-2 / (10/6)^a > -3 / (14/6)^a), the whole one from 1.3 on (8 words)."""
    return [
        Hypothesis(tokens=reference[:keep], score=0.0, log_prob=-2.0),
        Hypothesis(tokens=reference, score=0.0, log_prob=-3.0),
    ]


# The model of tests whose searches are replaced: only its positions are read (they never limit here).
UNSEARCHED = SimpleNamespace(max_positions=1 << 20)


def finding_short_and_full(monkeypatch: pytest.MonkeyPatch, dev: SimpleNamespace) -> None:
    """Every sentence's search finds short_and_full(reference, keep=4): a penalty of 1.3 gains everywhere."""
    found = [short_and_full(reference, keep=4) for reference in dev.references]
    monkeypatch.setattr(tuning_module, "finished_hypotheses", lambda model, v, sources, options, prefixes: found)


def test_a_clear_gain_changes_the_length_penalty(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = dev_set(40, source_length=20, reference_length=8)
    finding_short_and_full(monkeypatch, dev)
    record = tune_decoding(UNSEARCHED, dev, sentences=None)
    assert record["chosen"] and record["values"] == {"length_penalty": 1.3, "max_len_a": 1.2}
    assert record["bleu"] == pytest.approx(100.0) and record["default_bleu"] < 60 and record["wins"] == 1.0
    assert record["searches"] == 1 and record["exact"] and record["sentences"] == 40
    assert (
        record["penalties"]["1.2"] == round(record["default_bleu"], 2) and record["penalties"]["1.3"] == 100.0
    )


def test_a_gain_within_noise_keeps_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """One sentence in 40 gains at a higher penalty: in about a third of the bootstrap resamples it is
    missing and the two settings tie, so the gain is not trusted."""
    dev = dev_set(40, source_length=20, reference_length=8)
    same = [Hypothesis(tokens=ref[:6], score=0.0, log_prob=-1.0) for ref in dev.references]
    monkeypatch.setattr(
        tuning_module, "finished_hypotheses", lambda model, v, sources, options, prefixes: [
            short_and_full(dev.references[0], keep=4), *([hyp] for hyp in same[1:])
        ],
    )  # fmt: skip
    record = tune_decoding(UNSEARCHED, dev, sentences=None)
    assert not record["chosen"] and record["values"] == {"length_penalty": 1.0, "max_len_a": 1.2}
    other = record["best_other"]
    assert other["values"]["length_penalty"] == 1.3 and other["bleu"] > record["default_bleu"]
    assert 0.5 < other["wins"] < 0.95


def test_outputs_at_the_length_limit_lead_to_a_wider_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources of 5 tokens allow floor(1.2 * 5 + 10) = 16 output tokens; the references have 18, which a
    1.5 times wider max_len_a (1.8: 19 tokens) lets through."""
    dev = dev_set(30, source_length=5, reference_length=18)
    searched = []

    def search(model, validator, sources, options, prefixes) -> list[list[Hypothesis]]:
        searched.append(options.max_len_a)
        limit = int(options.max_len_a * 5 + 10)
        sample = [dev.references[i] for i in evenly_spaced(len(dev.references), len(sources))]
        return [[Hypothesis(tokens=ref[:limit], score=0.0, log_prob=-1.0)] for ref in sample]

    monkeypatch.setattr(tuning_module, "finished_hypotheses", search)
    record = tune_decoding(UNSEARCHED, dev, sentences=12)
    assert searched == [1.2, 1.8] and record["searches"] == 2 and record["limit_share"] == 1.0
    assert record["chosen"] and record["values"] == {"length_penalty": 1.0, "max_len_a": 1.8}
    assert record["sentences"] == 12 and record["dev_sentences"] == 30


def test_without_stop_early_the_winner_is_confirmed_by_a_real_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-ranking is exact only with stop_early; otherwise a real search decides, here against the gain."""
    dev = dev_set(40, source_length=20, reference_length=8)
    finding_short_and_full(monkeypatch, dev)
    confirmed = []

    def real_search(model, validator, sources, options, prefixes) -> list[Hypothesis]:
        confirmed.append(options.length_penalty)
        return [short_and_full(ref, keep=4)[0] for ref in dev.references]  # the short ones after all

    monkeypatch.setattr(tuning_module, "real_search", real_search)
    record = tune_decoding(UNSEARCHED, dev, sentences=None, base=DEFAULT_OPTIONS.replace(stop_early=False))
    assert confirmed == [1.3] and record["searches"] == 2 and not record["exact"]
    assert not record["chosen"] and record["values"]["length_penalty"] == 1.0

"""Validation during training decodes a multilingual model as the Translator does: the target language
code forced first (dev BLEU's hypotheses and tune_decoding's searches), so that fine-tuning an imported
M2M100/NLLB model scores what the model will translate."""

from __future__ import annotations

from pathlib import Path

import pytest
import sacrebleu
import torch
from multilingual_model import OPTIONS, dev_validator, multilingual_checkpoint

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.loading import load_for_inference
from seq2seq.train.tune_decoding import finished_hypotheses, real_search
from seq2seq.train.validation import DevDirection, Validator

TEXTS = ["in the beginning god created heaven", "the night was good", "water and land"]
SEARCH = SearchOptions(beam_size=4, **OPTIONS)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return multilingual_checkpoint(tmp_path_factory.mktemp("model") / "model.pt")


def validator(checkpoint: Path) -> tuple[Validator, torch.nn.Module]:
    return dev_validator(checkpoint, TEXTS, SEARCH)


def test_dev_bleu_decodes_as_the_translator(checkpoint):
    check, model = validator(checkpoint)
    assert check.target_prefix == [check.tgt_tokenizer.languages["es"]]
    samples = check.dev_bleu(model)["samples"]
    expected = Translator.from_checkpoint(checkpoint, options=SEARCH).translate(TEXTS)
    assert [sample["hyp"] for sample in samples] == [t.text for t in expected]


def test_tuning_searches_force_the_code(checkpoint):
    check, model = validator(checkpoint)
    sources = [check.dev[i][0].tolist() for i in range(len(TEXTS))]
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    expected = [nbest[0] for nbest in translator.search(sources)]
    prefixes = [check.prefix_of(i) for i in range(len(TEXTS))]
    assert real_search(model, check, sources, SEARCH, prefixes) == expected
    finished = finished_hypotheses(model, check, sources, SEARCH, prefixes)
    assert all(h.tokens[0] == check.target_prefix[0] for hypotheses in finished for h in hypotheses)
    assert all(expected[i] in finished[i] for i in range(len(TEXTS)))  # the search's best finished too


def test_each_dev_direction_is_scored_with_its_own_target_token_and_the_means_lead(checkpoint):
    """Two directions (en->es, en->fr) of one dev set: each one's BLEU/chrF is sacrebleu's on what the
    Translator gives for its tgt_lang, and bleu/chrf are their unweighted means."""
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    sources = Translator.from_checkpoint(checkpoint).encode(TEXTS).sources
    references = ["the night was good", "god created water", "land and heaven"]
    codes = loaded.tgt_tokenizer.languages
    directions = [DevDirection("en-es", range(0, 3), (codes["es"],)), DevDirection("en-fr", range(3, 6), (codes["fr"],))]
    check = Validator(
        dev=[(torch.tensor(source),) for source in sources + sources], dev_batches=[],
        make_batch=lambda indices: None, dev_src_texts=TEXTS + TEXTS, dev_ref_texts=references + references,
        src_tokenizer=loaded.src_tokenizer, tgt_tokenizer=loaded.tgt_tokenizer, loss_fn=lambda *args: None,
        device=torch.device("cpu"), precision="fp32", search=SEARCH, max_tokens=4096, n_samples=6,
        attention_plot=False, directions=directions,
    )  # fmt: skip
    metrics = check.dev_bleu(loaded.model)
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    for name, code in (("en-es", "es"), ("en-fr", "fr")):
        hypotheses = [t.text for t in translator.translate(TEXTS, tgt_lang=code)]
        assert metrics[f"bleu_{name}"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)
        assert metrics[f"chrf_{name}"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references]).score)
    assert [s["hyp"] for s in metrics["samples"][3:]] == [t.text for t in translator.translate(TEXTS, tgt_lang="fr")]
    assert metrics["samples"][0]["hyp"] != metrics["samples"][3]["hyp"]  # the codes chose different outputs
    assert metrics["bleu"] == pytest.approx((metrics["bleu_en-es"] + metrics["bleu_en-fr"]) / 2)
    assert metrics["chrf"] == pytest.approx((metrics["chrf_en-es"] + metrics["chrf_en-fr"]) / 2)
    assert check.chosen_sentences(2) == [0, 3] and check.chosen_sentences(None) == list(range(6))
    assert [check.prefix_of(i) for i in (2, 3)] == [[codes["es"]], [codes["fr"]]]

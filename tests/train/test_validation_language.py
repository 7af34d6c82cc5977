"""Validation during training decodes a multilingual model as the Translator does: the target language
code forced first (dev BLEU's hypotheses and tune_decoding's searches), so that fine-tuning an imported
M2M100/NLLB model scores what the model will translate."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from multilingual_model import OPTIONS, multilingual_checkpoint

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.loading import load_for_inference
from seq2seq.train.tune_decoding import finished_hypotheses, real_search
from seq2seq.train.validation import Validator

TEXTS = ["in the beginning god created heaven", "the night was good", "water and land"]
SEARCH = SearchOptions(beam_size=4, **OPTIONS)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return multilingual_checkpoint(tmp_path_factory.mktemp("model") / "model.pt")


def validator(checkpoint: Path) -> tuple[Validator, torch.nn.Module]:
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    sources = Translator.from_checkpoint(checkpoint).encode(TEXTS).sources
    check = Validator(
        dev=[(torch.tensor(source),) for source in sources], dev_batches=[], make_batch=lambda indices: None,
        dev_src_texts=TEXTS, dev_ref_texts=TEXTS, src_tokenizer=loaded.src_tokenizer,
        tgt_tokenizer=loaded.tgt_tokenizer, loss_fn=lambda *args: None, device=torch.device("cpu"),
        precision="fp32", search=SEARCH, max_tokens=4096, n_samples=len(TEXTS), attention_plot=False,
    )  # fmt: skip
    return check, loaded.model


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
    assert real_search(model, check, sources, SEARCH) == expected
    finished = finished_hypotheses(model, check, sources, SEARCH)
    assert all(h.tokens[0] == check.target_prefix[0] for hypotheses in finished for h in hypotheses)
    assert all(expected[i] in finished[i] for i in range(len(TEXTS)))  # the search's best finished too

"""Imported Hugging Face models compute what transformers computes: a MarianMTModel, an M2M100 and an
NLLB model with random weights (and their tokenizers, from sentencepiece models trained on the fly) give,
once imported, transformers' logits under teacher forcing, and `generate`'s greedy and beam outputs
through our public Translator (the same tokens, the same text as batch_decode(skip_special_tokens=True)).
huggingface_models.py says how `generate` is set to search as we do; with HF's own length penalty,
test_beam_with_transformers_length_penalty shows the exact relation between its ranking and ours.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from huggingface_models import LIMIT, TEXTS, Imported, build, logit_difference, outputs  # noqa: E402

from seq2seq.decode.beam import beam_search  # noqa: E402
from seq2seq.decode.hypotheses import SpecialIds  # noqa: E402
from seq2seq.decode.options import SearchOptions  # noqa: E402
from seq2seq.inference.loading import load_for_inference  # noqa: E402
from seq2seq.inference.translator import Translator  # noqa: E402


@pytest.fixture(scope="module", params=["marian", "m2m100", "nllb"])
def imported(request, tmp_path_factory) -> Imported:
    return build(request.param, tmp_path_factory.mktemp(request.param))


def test_our_tokenizers_give_transformers_ids(imported):
    translator = Translator.from_checkpoint(imported.checkpoint)
    ours = translator.encode(TEXTS).sources
    theirs = [imported.tokenizer(text)["input_ids"] for text in TEXTS]
    assert ours == theirs


def test_logits_equal_transformers_under_teacher_forcing(imported):
    """A padded batch of sources and targets: the logits at every real target position."""
    assert logit_difference(imported.model, imported.tokenizer, imported.checkpoint) <= 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_greedy_and_beam_outputs_equal_generate(imported, beam_size):
    options = SearchOptions(beam_size=beam_size, length_penalty=0.0, max_len_a=0.0, max_len_b=LIMIT)
    translator = Translator.from_checkpoint(imported.checkpoint, options=options)
    sources = translator.encode(TEXTS).sources
    ours = [nbest[0].tokens for nbest in translator.search(sources)]
    expected = imported.generate(TEXTS, num_beams=beam_size, length_penalty=0.0)
    assert ours == outputs(expected, imported.model.config)
    if beam_size > 1:
        assert {len(tokens) for tokens in ours} != {LIMIT}  # some outputs end before the limit
    texts = imported.tokenizer.batch_decode(expected, skip_special_tokens=True)
    assert [t.text for t in translator.translate(TEXTS)] == texts


@pytest.mark.slow
def test_beam_with_transformers_length_penalty(imported):
    """HF ranks finished hypotheses by log_prob / length ** length_penalty (length: output tokens and
    eos), we by the GNMT penalty; with early stopping which hypotheses finish depends on neither, so our
    finished hypotheses re-ranked by HF's formula give generate's result exactly. One more difference:
    HF's forced_bos_token_id gives the target language code a log-probability of 0, ours keeps the
    model's (a constant per sentence, which only a length normalisation turns into a difference)."""
    loaded = load_for_inference(imported.checkpoint, torch.device("cpu"))
    translator = Translator.from_checkpoint(imported.checkpoint)
    encoded = translator.encode(TEXTS)
    sources = encoded.sources
    src = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in sources], batch_first=True,
                                          padding_value=loaded.tgt_tokenizer.pad_id)  # fmt: skip
    options = SearchOptions(beam_size=4, length_penalty=1.0, max_len_a=0.0, max_len_b=LIMIT)
    prefix = encoded.prefixes if any(encoded.prefixes) else None  # the target language code, if any
    finished = beam_search(loaded.model, src, options, ids=SpecialIds.of(loaded.tgt_tokenizer),
                           all_finished=True, prefix=prefix)  # fmt: skip
    forced = len(prefix[0]) if prefix else 0

    def hf_score(hypothesis) -> float:
        log_prob = hypothesis.log_prob - sum(hypothesis.positional_scores[:forced])
        return log_prob / (len(hypothesis.tokens) + 1) ** options.length_penalty

    reranked = [max(hyps, key=hf_score).tokens for hyps in finished]
    expected = imported.generate(TEXTS, num_beams=4, length_penalty=1.0)
    assert reranked == outputs(expected, imported.model.config)

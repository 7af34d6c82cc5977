"""Confidence from the CTranslate2 engine means what ours means: for an exported tiny model, the
Translator's token probabilities and sentence confidences equal our engine's within 1e-4 (greedy, both
families, a padded batch with an empty text), every output token and the final eos scored, forced
prefix tokens with their model probability; the engine scores the outputs only when asked."""

from __future__ import annotations

import pytest
from test_export_decoder_only import decoder_only_model  # the decoder-only export tests' model
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.options import SearchOptions
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.inference.translator import Translator

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'"
)

GREEDY = SearchOptions(max_len_a=0.0, max_len_b=12)  # a constant limit: one per batch in CTranslate2 too
TEXTS = [*sentences(8, seed=1, words=(1, 10)), ""]
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


@pytest.fixture(scope="module", params=["encoder_decoder", "decoder_only"])
def engines(request, tokenizer, tmp_path_factory) -> tuple[Translator, Translator]:
    """(ours, exported) Translators of one random tiny model of the family."""
    directory = tmp_path_factory.mktemp(request.param)
    if request.param == "encoder_decoder":
        model = tiny_model(tokenizer.vocab_size, max_positions=64, sharpness=4.0)
    else:
        model = decoder_only_model(tokenizer)
    checkpoint = save_tiny_checkpoint(directory / "model.pt", model, tokenizer, step=7)
    exported = export_ctranslate2(checkpoint, directory / "ct2")
    return Translator.from_checkpoint(checkpoint, options=GREEDY), Translator.from_checkpoint(exported)


def assert_same_confidence(ours, theirs) -> None:
    assert theirs.text == ours.text and theirs.tokens == ours.tokens
    assert theirs.token_probs == pytest.approx(ours.token_probs, abs=TOLERANCE)
    if ours.confidence is None:
        assert theirs.confidence is None and theirs.mean_log_prob is None
        return
    assert theirs.mean_log_prob == pytest.approx(ours.mean_log_prob, abs=TOLERANCE)
    assert theirs.confidence == pytest.approx(ours.confidence, abs=TOLERANCE)


def test_greedy_confidences_equal_ours(engines):
    ours, theirs = engines
    assert theirs.engine.name == "ctranslate2"
    mine = ours.translate(TEXTS, confidence=True, beam_size=1)
    exported = theirs.translate(TEXTS, confidence=True, options=GREEDY)
    for own, other in zip(mine, exported):
        assert_same_confidence(own, other)
    assert any(t.tokens and t.tokens[-1] == "</s>" and len(t.tokens) == 13 for t in exported)  # at the limit
    assert len({t.confidence for t in exported}) == len(TEXTS)  # every text its own


def test_forced_prefix_tokens_keep_their_model_probability(engines, tokenizer):
    ours, theirs = engines
    for text, prefix in zip(TEXTS, ["god created", "in the", "light was"]):  # one at a time: one limit each
        own = ours.translate([text], prefixes=[prefix], beam_size=1, confidence=True)[0]
        other = theirs.translate([text], prefixes=[prefix], options=GREEDY, confidence=True)[0]
        assert_same_confidence(own, other)
        assert other.tokens[: len(tokenizer.encode(prefix))] == tokenizer.pieces(prefix)


def test_the_engine_scores_only_when_asked_and_the_search_is_unchanged(engines):
    _, theirs = engines
    sources = theirs.encode(TEXTS[:4]).sources
    plain = theirs.search(sources, GREEDY.replace(beam_size=3, nbest=2))
    scored = theirs.search(sources, GREEDY.replace(beam_size=3, nbest=2), confidence=True)
    assert all(h.positional_scores is None for nbest in plain for h in nbest)
    for before, after in zip(plain, scored):
        assert [(h.tokens, h.score) for h in before] == [(h.tokens, h.score) for h in after]
        for hypothesis in after:
            assert len(hypothesis.positional_scores) == len(hypothesis.tokens) + 1
            assert hypothesis.log_prob == pytest.approx(sum(hypothesis.positional_scores))

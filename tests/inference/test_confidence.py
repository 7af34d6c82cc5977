"""Model confidence: the token probabilities a Translator returns are the model's own, i.e. exp of the
log-probabilities that teacher forcing the same output through the model gives (log_softmax of
model(src, tgt_in) at each output token and the final eos), for greedy and beam search over padded
batches, for sampling (temperature and top-k change the choice, not the recorded probability), for a
forced prefix (its tokens keep their model probability), for both model families, and for an ensemble
(the mean of its members' log-probabilities); the sentence values are the mean log-probability and its
exponent; a split text concatenates its pieces'."""

from __future__ import annotations

import math

import pytest
import torch
from tiny_models import sentences, tiny_decoder_only, tiny_model, tiny_tokenizer
from torch import nn

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.hypotheses import Hypothesis, SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.confidence import Confidence, Translation, confidence_of
from seq2seq.inference.engines import TorchEngine
from seq2seq.inference.translator import Translator

LIMIT = SearchOptions(max_len_a=0.0, max_len_b=12)  # a constant limit: random models rarely stop
TEXTS = [*sentences(6, seed=3, words=(1, 9)), ""]  # different lengths: a padded batch; an empty text
ATOL = 1e-5


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


def build(tokenizer: Tokenizer, family: str, *, seed: int = 0, sharpness: float = 4.0) -> nn.Module:
    make = tiny_model if family == "encoder_decoder" else tiny_decoder_only
    return make(tokenizer.vocab_size, seed=seed, sharpness=sharpness, max_positions=64)


def translator_of(model: nn.Module, tokenizer: Tokenizer, **settings) -> Translator:
    engine = TorchEngine(model, SpecialIds.of(tokenizer), device=torch.device("cpu"), precision="fp32")
    return Translator(tokenizer, tokenizer, engine, options=LIMIT, **settings)


@torch.no_grad()
def forced_log_probs(model: nn.Module, source: list[int], output: list[int], ids: SpecialIds) -> list[float]:
    """Teacher forcing: the model's log-probability of each output token, then of eos, in one pass."""
    src = torch.tensor([source])  # (1, S)
    tgt_in = torch.tensor([[ids.bos, *output]])  # (1, T)
    logprobs = torch.log_softmax(model(src, tgt_in).float(), dim=-1)[0]  # (T, V)
    targets = torch.tensor([*output, ids.eos])  # (T,)
    return logprobs[torch.arange(len(targets)), targets].tolist()


def output_ids(translation: Translation, tokenizer: Tokenizer) -> list[list[int]]:
    """The output token ids of each piece of a translation (its tokens, split at each "</s>")."""
    pieces: list[list[int]] = [[]]
    for piece in translation.tokens:
        if piece == "</s>":
            pieces.append([])
        else:
            pieces[-1].append(tokenizer.piece_to_id(piece))
    assert pieces[-1] == []  # the tokens end with "</s>"
    return pieces[:-1]


def assert_model_probabilities(
    translation: Translation, models: list[nn.Module], sources: list[list[int]], tokenizer: Tokenizer
) -> None:
    """The translation's token probabilities are exp of the (members' mean) teacher-forced
    log-probabilities of its own output, and its sentence values their mean and its exponent."""
    ids = SpecialIds.of(tokenizer)
    outputs = output_ids(translation, tokenizer)
    assert len(outputs) == len(sources) and len(translation.token_probs) == len(translation.tokens)
    expected: list[float] = []
    for source, output in zip(sources, outputs):
        members = [forced_log_probs(model, source, output, ids) for model in models]
        expected.extend(sum(values) / len(values) for values in zip(*members))
    assert translation.token_probs == pytest.approx([math.exp(v) for v in expected], abs=ATOL, rel=1e-4)
    mean = sum(expected) / len(expected)
    assert translation.mean_log_prob == pytest.approx(mean, abs=ATOL)
    assert translation.confidence == pytest.approx(math.exp(mean), rel=1e-4)
    assert 0.0 < translation.confidence <= 1.0


def check_texts(translator: Translator, translations: list[Translation], models: list[nn.Module]) -> None:
    sources = translator.encode(TEXTS).sources
    for text, source, translation in zip(TEXTS, sources, translations):
        if text:
            assert_model_probabilities(translation, models, [source], translator.tgt_tokenizer)
        else:
            assert translation == Translation("", 0, None, None, [], [])


@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only"])
def test_greedy_confidence_is_the_models_probability(tokenizer, family):
    model = build(tokenizer, family)
    translator = translator_of(model, tokenizer)
    translations = translator.translate(TEXTS, beam_size=1, confidence=True)
    assert all(isinstance(t, Translation) for t in translations)
    check_texts(translator, translations, [model])
    plain = translator.translate(TEXTS, beam_size=1)
    assert [(t.text, t.score) for t in translations] == [(t.text, t.score) for t in plain]  # the same search
    assert len({t.confidence for t in translations}) == len(TEXTS)  # every text its own


@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only"])
def test_beam_nbest_confidence_is_the_models_probability(tokenizer, family):
    model = build(tokenizer, family)
    translator = translator_of(model, tokenizer)
    nbest = [best.nbest for best in translator.translate(TEXTS, beam_size=4, nbest=3, confidence=True)]
    sources = translator.encode(TEXTS).sources
    for text, source, ranked in zip(TEXTS, sources, nbest):
        assert len(ranked) == (3 if text else 1)
        for translation in ranked if text else []:
            assert_model_probabilities(translation, [model], [source], tokenizer)
    plain = [best.nbest for best in translator.translate(TEXTS, beam_size=4, nbest=3)]
    assert [[(t.text, t.score) for t in ranked] for ranked in nbest] == [
        [(t.text, t.score) for t in ranked] for ranked in plain
    ]


@pytest.mark.parametrize(("temperature", "top_k"), [(0.5, 0), (2.0, 5), (1.0, 3)])
def test_sampled_tokens_keep_their_untempered_model_probability(tokenizer, temperature, top_k):
    model = build(tokenizer, "encoder_decoder", seed=2, sharpness=1.0)  # flat: the samples vary
    translator = translator_of(model, tokenizer)
    options = LIMIT.replace(sampling=True, temperature=temperature, top_k=top_k, nbest=3, seed=11)
    samples = [best.nbest for best in translator.translate(TEXTS[:4], options=options, confidence=True)]
    sources = translator.encode(TEXTS[:4]).sources
    for source, ranked in zip(sources, samples):
        assert len({tuple(t.tokens) for t in ranked}) > 1  # different samples
        for translation in ranked:
            assert_model_probabilities(translation, [model], [source], tokenizer)


@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only"])
def test_forced_prefix_tokens_keep_their_model_probability(tokenizer, family):
    model = build(tokenizer, family)
    translator = translator_of(model, tokenizer)
    texts, prefixes = TEXTS[:3], ["god created", "", "in the"]
    for beam_size in (1, 3):
        translations = translator.translate(texts, beam_size=beam_size, prefixes=prefixes, confidence=True)
        for text, prefix, translation in zip(texts, prefixes, translations):
            forced = tokenizer.encode(prefix) if prefix else []
            assert output_ids(translation, tokenizer)[0][: len(forced)] == forced
            assert_model_probabilities(translation, [model], translator.encode([text]).sources, tokenizer)
    probabilities = translations[0].token_probs[:2]
    assert min(probabilities) < 0.5  # the model would not have chosen the forced start: it is not 1


# heavy: the slowest of the quick loop (an ensemble's beam searches and its members' scoring, per family)
@pytest.mark.slow
@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only"])
def test_an_ensemble_gives_the_mean_of_its_members_log_probabilities(tokenizer, family):
    members = [build(tokenizer, family, seed=0), build(tokenizer, family, seed=5)]
    translator = translator_of(Ensemble(members).eval(), tokenizer)
    for beam_size in (1, 4):
        translations = translator.translate(TEXTS, beam_size=beam_size, confidence=True)
        check_texts(translator, translations, members)
    alone = translator_of(members[0], tokenizer).translate(TEXTS[:1], beam_size=1, confidence=True)
    together = translator.translate(TEXTS[:1], beam_size=1, confidence=True)
    assert alone[0].token_probs != together[0].token_probs  # the second member counts


def test_a_split_text_concatenates_its_pieces(tokenizer):
    model = build(tokenizer, "encoder_decoder")
    translator = translator_of(model, tokenizer, max_input_tokens=6, long_lines="split")
    text = " ".join(["god created heaven and earth"] * 3)
    encoded = translator.encode([text, "light"])
    pieces = [source for source, owner in zip(encoded.sources, encoded.owners) if owner == 0]
    assert len(pieces) >= 3
    joined, short = translator.translate([text, "light"], beam_size=1, confidence=True)
    assert joined.tokens.count("</s>") == len(pieces) and short.tokens.count("</s>") == 1
    assert_model_probabilities(joined, [model], pieces, tokenizer)
    alone = [translator.search([piece], LIMIT)[0][0] for piece in pieces]
    log_probs = [value for hypothesis in alone for value in hypothesis.positional_scores]
    assert joined.mean_log_prob == pytest.approx(sum(log_probs) / len(log_probs), abs=ATOL)
    assert joined.text == " ".join(translator.detokenize(h.tokens) for h in alone if h.tokens)
    # a sum of a few hundred log-probabilities, batched differently: equal to float32 rounding, relatively
    assert joined.score == pytest.approx(sum(h.score for h in alone), rel=1e-6, abs=ATOL)


def test_the_definitions_on_hand_made_hypotheses(tokenizer):
    hypothesis = Hypothesis(tokens=[10, 11], score=-0.6, log_prob=-0.6, positional_scores=[-0.1, -0.2, -0.3])
    confidence = confidence_of([hypothesis], tokenizer)
    assert confidence.tokens == [tokenizer.id_to_piece(10), tokenizer.id_to_piece(11), "</s>"]
    assert confidence.token_probs == pytest.approx([math.exp(-0.1), math.exp(-0.2), math.exp(-0.3)])
    assert confidence.mean_log_prob == pytest.approx(-0.2)
    assert confidence.confidence == pytest.approx(math.exp(-0.2))
    other = Hypothesis(tokens=[], score=-1.0, log_prob=-1.0, positional_scores=[-1.0])
    both = confidence_of([hypothesis, other], tokenizer)
    assert both.tokens[-2:] == ["</s>", "</s>"] and both.mean_log_prob == pytest.approx(-1.6 / 4)
    assert confidence_of([], tokenizer) == Confidence()
    assert Confidence().to_json() == {
        "confidence": None,
        "mean_log_prob": None,
        "tokens": [],
        "token_probs": [],
    }
    shown = Translation.of("x", -0.6, confidence).to_json()
    assert shown["text"] == "x" and shown["confidence"] == round(math.exp(-0.2), 6)
    with pytest.raises(ValueError, match="confidence=True"):
        confidence_of([Hypothesis(tokens=[10], score=-1.0, log_prob=-1.0)], tokenizer)


def test_the_return_shapes(tokenizer):
    translator = translator_of(build(tokenizer, "encoder_decoder"), tokenizer)
    texts = TEXTS[:2]
    plain = translator.translate(texts, beam_size=2)
    assert all(isinstance(t, Translation) and t.confidence is None for t in plain)
    detailed = translator.translate(texts, beam_size=2, confidence=True)
    assert all(t.confidence is not None for t in detailed)
    assert [(t.text, t.score) for t in detailed] == [(t.text, t.score) for t in plain]
    nbest = translator.translate(texts, beam_size=2, nbest=2, confidence=True)
    assert [len(best.nbest) for best in nbest] == [2, 2] and isinstance(nbest[0].nbest[1], Translation)
    assert translator.translate([""], confidence=True) == [Translation("", 0)]

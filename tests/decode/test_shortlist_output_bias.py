"""A vocabulary shortlist over a model with a logit bias (model.output_bias): the candidates' logits are the
full model's, bias included, in float and in int8, and a shortlist holding the outputs' tokens finds the
same translations."""

from __future__ import annotations

import pytest
import torch
from tiny_models import sentences, tiny_model, tiny_tokenizer

from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.shortlist import Shortlist, restricted
from seq2seq.inference.engines import TorchEngine
from seq2seq.nn.quantized import int8_available, quantize_int8

VOCAB = 40


def biased_model(vocab: int = VOCAB, **overrides) -> torch.nn.Module:
    """A tiny model with a random logit bias (zeros at init would hide a path that drops it)."""
    model = tiny_model(vocab, output_bias=True, max_positions=64, **overrides)
    with torch.no_grad():
        model.output.bias.copy_(3 * torch.randn(vocab, generator=torch.Generator().manual_seed(1)))
    return model


def one_sentence(candidates: torch.Tensor, vocab: int = VOCAB) -> torch.Tensor:
    return torch.zeros(1, vocab, dtype=torch.bool).index_fill_(1, candidates, True)


KINDS = ["tied", "untied", "int8_tied", "int8_untied"]


@pytest.mark.parametrize("kind", KINDS)
@torch.no_grad()
def test_restricted_logits_are_the_full_models_bias_included(kind: str) -> None:
    if kind.startswith("int8") and not int8_available():
        pytest.skip("this PyTorch build has no dynamic int8 kernels")
    untied = {"share_embeddings": False, "share_decoder_output": False} if kind.endswith("untied") else {}
    model = biased_model(**untied)
    if kind.startswith("int8"):
        model = quantize_int8(model)
    full = model.output
    candidates = torch.tensor([1, 3, 7, 9, 30])
    hidden = torch.randn(2, 5, 64)  # (B, T, D)
    expected = full(hidden)  # (B, T, V)
    with restricted(model, one_sentence(candidates)):
        logits = model.output(hidden)
    assert model.output is full
    assert torch.equal(logits[..., candidates], expected[..., candidates])
    assert torch.isneginf(logits.sum(-1)).all()  # every other token is -inf


@pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no dynamic int8 kernels")
@torch.no_grad()
def test_int8_keeps_the_bias_in_the_output_projection() -> None:
    from seq2seq.nn.quantized import Int8Linear

    model = biased_model()
    weight, bias = model.output.weight.detach().clone(), model.output.bias.detach().clone()
    hidden = torch.randn(3, 64)
    expected = Int8Linear(weight, bias)(hidden)  # (3, V)
    quantize_int8(model)
    assert torch.equal(model.output(hidden), expected)
    unbiased = Int8Linear(weight, None)(hidden)
    torch.testing.assert_close(expected, unbiased + bias, rtol=1e-5, atol=1e-5)  # the same product plus b


@pytest.mark.parametrize("kind", ["float", "int8"])
def test_a_shortlist_holding_the_outputs_tokens_finds_the_same_translations(kind: str) -> None:
    if kind == "int8" and not int8_available():
        pytest.skip("this PyTorch build has no dynamic int8 kernels")
    tokenizer = tiny_tokenizer()
    model = biased_model(tokenizer.vocab_size)
    if kind == "int8":
        model = quantize_int8(model)
    ids = SpecialIds.of(tokenizer)
    options = SearchOptions(beam_size=3, nbest=1, max_len_a=0.0, max_len_b=10)
    sources = [tokenizer.encode(text) + [ids.eos] for text in sentences(5, seed=5)]

    def search(shortlist):
        engine = TorchEngine(model, ids, device=torch.device("cpu"), precision="fp32", shortlist=shortlist)
        return engine.search(sources, options, max_tokens=4096)

    full = search(None)
    tokens = sorted({t for nbest in full for h in nbest for t in h.tokens} | {4, 5, 6})
    table = torch.tensor([tokens] * tokenizer.vocab_size, dtype=torch.int32)
    always = torch.tensor([tokenizer.unk_id, ids.eos], dtype=torch.int32)
    shortlist = Shortlist(table, torch.zeros(0, dtype=torch.int32), always, tokenizer.vocab_size, ("a", "b"))
    assert len(tokens) + 2 < tokenizer.vocab_size - 10
    assert [[h.tokens for h in nbest] for nbest in search(shortlist)] == [
        [h.tokens for h in nbest] for nbest in full
    ]

"""int8 inference (seq2seq.nn.quantized): an Int8Linear computes x W^T + b to within int8 rounding;
quantize_int8 replaces every linear layer and the output projection of both translating families and of
an ensemble, keeps the embeddings float32, and a quantized tiny model's teacher-forced probabilities
stay within the stated tolerances of the float32 model's; Translator.from_checkpoint(quantization=...)
runs it, and refuses the settings it cannot run with one-line errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tiny_models import save_tiny_checkpoint, sentences, tiny_decoder_only, tiny_model, tiny_tokenizer
from torch import nn

from seq2seq.decode.ensemble import Ensemble
from seq2seq.errors import UserError
from seq2seq.inference import engine_choice
from seq2seq.inference.translator import Translator, check_quantization
from seq2seq.nn.embeddings import OutputProjection
from seq2seq.nn.quantized import Int8Linear, int8_available, quantize_int8

pytestmark = pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no dynamic int8 kernels")

# The stated tolerances, teacher forcing the same tokens through the int8 model and the float32 model it
# came from (tiny model, random weights; its 32-wide layers round more than real ones): every next-token
# probability within PROBABILITY_TOLERANCE, and log-probabilities within LOG_TOLERANCE on average.
PROBABILITY_TOLERANCE = 0.02
LOG_TOLERANCE = 0.05


def test_int8_linear_equals_the_float_product_to_within_int8_rounding() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(64, 48)
    x = torch.randn(3, 7, 64)  # (B, T, in)
    quantized = Int8Linear(layer.weight, layer.bias)
    with torch.no_grad():
        expected = layer(x)
        got = quantized(x)
    assert got.shape == (3, 7, 48) and got.dtype == torch.float32
    error = (got - expected).abs().max() / expected.abs().max()
    assert 0 < error < 0.02  # int8 changes the result, by little
    no_bias = Int8Linear(layer.weight, None)(x)
    torch.testing.assert_close(no_bias, got - layer.bias, atol=0.05, rtol=0.05)


def linear_kinds(model: nn.Module) -> set[str]:
    kinds = (nn.Linear, OutputProjection)
    return {type(module).__name__ for module in model.modules() if isinstance(module, kinds)}


@torch.no_grad()
def teacher_forced(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """(B, T, V) log-probabilities of every next token; (M, B, T, V) for an ensemble's M members."""
    if isinstance(model, Ensemble):
        return torch.stack([teacher_forced(member, src, tgt) for member in model.members])
    return F.log_softmax(model(src, tgt), dim=-1)


@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only", "ensemble"])
def test_a_quantized_model_stays_within_the_tolerance_of_its_float_log_probabilities(family: str) -> None:
    make = tiny_decoder_only if family == "decoder_only" else tiny_model
    model = make(40)
    if family == "ensemble":
        model = Ensemble([model, tiny_model(40, seed=1)]).eval()
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(3, 40, (4, 9), generator=generator)
    tgt = torch.randint(3, 40, (4, 7), generator=generator)
    expected = teacher_forced(model, src, tgt)
    embeddings = {name: p.clone() for name, p in model.named_parameters() if "embedding" in name}
    assert quantize_int8(model) is model
    assert linear_kinds(model) == set()  # every nn.Linear and output projection is now an Int8Linear
    assert any(isinstance(module, Int8Linear) for module in model.modules())
    for name, parameter in model.named_parameters():  # what is left in float32: embeddings, norms
        assert parameter.dtype == torch.float32
        if name in embeddings:
            assert torch.equal(parameter, embeddings[name])
    got = teacher_forced(model, src, tgt)
    assert 0 < (got.exp() - expected.exp()).abs().max() < PROBABILITY_TOLERANCE
    assert (got - expected).abs().mean() < LOG_TOLERANCE


def test_translator_runs_an_int8_checkpoint_and_records_nothing_new(tmp_path) -> None:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0)
    path = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=3)
    texts = sentences(5, seed=2)
    full = Translator.from_checkpoint(path, options={"beam_size": 1, "max_len_a": 0.0, "max_len_b": 10})
    int8 = Translator.from_checkpoint(
        path, quantization="int8", options={"beam_size": 1, "max_len_a": 0.0, "max_len_b": 10}
    )
    assert any(isinstance(module, Int8Linear) for module in int8.model.modules())
    assert not any(isinstance(module, Int8Linear) for module in full.model.modules())
    ours = int8.translate(texts, confidence=True)
    theirs = full.translate(texts, confidence=True)
    agree = sum(a.text == b.text for a, b in zip(ours, theirs))
    assert agree >= 4, (ours, theirs)  # a sharp tiny model: int8 rounding rarely changes a greedy choice
    for a, b in zip(ours, theirs):
        if a.text == b.text:
            assert abs(a.confidence - b.confidence) < PROBABILITY_TOLERANCE


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"quantization": "int4"}, "quantization='int4' is not supported; choose none or int8"),
        ({"device": torch.device("cuda")}, "quantization=int8 runs on CPU"),
        ({"precision": "bf16"}, "quantization=int8 cannot run with precision=bf16"),
    ],
)
def test_settings_int8_cannot_run_are_refused(settings: dict, message: str) -> None:
    arguments = {"quantization": "int8", "engine": "torch", "device": torch.device("cpu")}
    arguments["precision"] = "fp32"
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(")):
        check_quantization(**{**arguments, **settings})


def test_a_build_without_int8_kernels_is_refused_and_ctranslate2_needs_none(monkeypatch) -> None:
    monkeypatch.setattr(engine_choice, "int8_available", lambda: False)
    with pytest.raises(UserError, match="this PyTorch build has no dynamic int8 kernels"):
        check_quantization("int8", engine="torch", device=torch.device("cpu"), precision="fp32")
    # CTranslate2 quantizes with its own kernels, on any device it runs on
    check_quantization("int8", engine="ctranslate2", device=torch.device("cuda"), precision="bf16")


@pytest.mark.parametrize("tied", [True, False])
def test_quantizing_releases_the_float_output_projection_unless_an_embedding_shares_it(tied: bool) -> None:
    """The float weight of an untied output projection is gone once int8 (the shortlist packs its rows
    from the int8 weights); a tied one lives on in the target embedding, which still uses it."""
    import gc
    import weakref

    sharing = {} if tied else {"share_embeddings": False, "share_decoder_output": False}
    model = tiny_model(40, **sharing)
    weight = weakref.ref(model.output.weight)
    quantize_int8(model)
    gc.collect()
    assert (weight() is not None) == tied
    if tied:
        assert weight() is model.decoder.embedding.weight

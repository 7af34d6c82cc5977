"""Every engine implements the Engine protocol for real (seq2seq.inference.engines): ours on each
translating family and on an ensemble, and CTranslate2's for each exported family (its runner faked:
the protocol is about the engine, not about CTranslate2)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from protocol_check import mismatches, protocol_properties
from tiny_models import tiny_decoder_only, tiny_model, tiny_tokenizer

from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.inference import engines
from seq2seq.inference.engines import CTranslate2Engine, Engine, TorchEngine
from seq2seq.inference.generator_engine import CTranslate2DecoderOnlyEngine

CPU = torch.device("cpu")
IDS = SpecialIds(bos=2, eos=3, pad=0)


class FakeRunner:
    """Stands in for ctranslate2.Translator / Generator: built with the same arguments, never run."""

    def __init__(self, path: str, **settings: object) -> None:
        self.path, self.settings = path, settings


def ctranslate2_engine(monkeypatch: pytest.MonkeyPatch, kind: type[CTranslate2Engine]) -> CTranslate2Engine:
    fake = SimpleNamespace(Translator=FakeRunner, Generator=FakeRunner)
    monkeypatch.setattr(engines, "import_ctranslate2", lambda: fake)
    tokenizer = tiny_tokenizer()
    return kind(Path("export"), (tokenizer, tokenizer), device=CPU, threads=1, max_positions=24)


def torch_engine(model: torch.nn.Module) -> TorchEngine:
    return TorchEngine(model, IDS, device=CPU, precision="fp32")


TORCH_MODELS = {
    "encoder_decoder": lambda: tiny_model(12),
    "decoder_only": lambda: tiny_decoder_only(12),
    "ensemble": lambda: Ensemble([tiny_model(12, seed=0), tiny_model(12, seed=1)]),
}


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_our_engine_implements_the_protocol(name: str) -> None:
    assert mismatches(torch_engine(TORCH_MODELS[name]()), Engine) == []


@pytest.mark.parametrize("kind", [CTranslate2Engine, CTranslate2DecoderOnlyEngine])
def test_the_ctranslate2_engines_implement_the_protocol(monkeypatch: pytest.MonkeyPatch, kind: type) -> None:
    engine = ctranslate2_engine(monkeypatch, kind)
    assert mismatches(engine, Engine) == [] and engine.compiled is False and engine.model is None


def test_the_protocol_holds_what_a_translator_asks() -> None:
    assert set(protocol_properties(Engine)) == {"max_positions", "compiled"}
    assert {"search", "output_room"} <= set(vars(Engine))


def test_every_engine_tells_the_rooms_its_search_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    src = torch.tensor([[5, 6, 3, 0], [5, 6, 7, 3]])  # 3 and 4 tokens
    encoder_decoder = tiny_model(12, max_positions=24)
    assert torch_engine(encoder_decoder).output_room(src).tolist() == [23, 23]
    assert ctranslate2_engine(monkeypatch, CTranslate2Engine).output_room(src).tolist() == [23, 23]
    decoder_only = tiny_decoder_only(12, max_positions=24)
    assert torch_engine(decoder_only).output_room(src).tolist() == [20, 19]  # 24 - source - tag
    exported = ctranslate2_engine(monkeypatch, CTranslate2DecoderOnlyEngine)
    assert exported.output_room(src).tolist() == [20, 19]
    assert torch_engine(Ensemble([tiny_model(12, max_positions=30), encoder_decoder])).max_positions == 24

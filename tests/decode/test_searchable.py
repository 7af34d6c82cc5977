"""Every model a search runs implements SearchableModel for real (seq2seq.decode.searchable): each
translating family, an ensemble of each, and the test models that stand in for them."""

from __future__ import annotations

import pytest
import tiny_models
import torch
from decode_helpers import PAD, eos_biased, tiny_model
from protocol_check import mismatches, protocol_methods, protocol_properties
from scripted_model import Scripted
from tiny_models import tiny_decoder_only

from seq2seq.decode.compiled import use_eager_decoding, use_static_decoding
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.searchable import SearchableModel, StaticStepping
from seq2seq.model import TRANSLATING_FAMILIES, build_encoder_only

MODELS = {
    "encoder_decoder": lambda: tiny_model(),
    "decoder_only": lambda: tiny_decoder_only(12, pad_id=PAD),
    "ensemble": lambda: Ensemble([tiny_model(seed=0), tiny_model(seed=1)]),
    "decoder_only_ensemble": lambda: Ensemble([tiny_decoder_only(12, seed=s, pad_id=PAD) for s in (0, 1)]),
    "scripted": lambda: Scripted([4, 5], 12),
    "biased": lambda: eos_biased(),
}


@pytest.mark.parametrize("name", MODELS)
def test_each_searched_model_implements_the_protocol(name: str) -> None:
    assert mismatches(MODELS[name](), SearchableModel) == []


def test_the_check_sees_what_a_search_calls() -> None:
    methods = {"encode", "init_state", "decode_step", "output_room"}
    assert methods <= set(protocol_methods(SearchableModel))
    assert set(protocol_properties(SearchableModel)) == {
        "returns_log_probs",
        "static_decoding",
        "max_positions",
    }


def test_the_check_catches_a_wrong_signature_and_a_missing_member() -> None:
    class Renamed(Scripted):
        def decode_step(self, tokens, state):  # not prev_tokens
            return super().decode_step(tokens, state)

    assert mismatches(Renamed([4], 12), SearchableModel) == [
        "decode_step['self', 'tokens', 'state'] differs from decode_step['self', 'prev_tokens', 'state']"
    ]
    qe = build_encoder_only(src_vocab_size=12, tgt_vocab_size=12, pad_id=PAD, layers=1, d_model=16,
                            n_heads=2, ffn_dim=32)  # fmt: skip
    assert not isinstance(qe, SearchableModel)  # it scores translations; no search runs it


def test_an_ensembles_positions_are_its_smallest_members() -> None:
    small, large = tiny_models.tiny_model(12, max_positions=40), tiny_models.tiny_model(12, max_positions=64)
    assert Ensemble([large, small]).max_positions == 40 == Ensemble([small, large]).config["max_positions"]
    src = torch.tensor([[5, 6, 3]])
    assert Ensemble([large, small]).output_room(src).tolist() == [39]


def test_families_say_whether_they_decode_on_static_caches() -> None:
    model, ensemble = tiny_model(), Ensemble([tiny_model(), tiny_model(seed=1)])
    assert model.family in TRANSLATING_FAMILIES and not model.returns_log_probs and ensemble.returns_log_probs
    use_static_decoding(ensemble, compiled=False)
    assert ensemble.static_decoding and all(member.static_decoding for member in ensemble.members)
    use_eager_decoding(ensemble)
    assert not ensemble.static_decoding
    assert tiny_decoder_only(12, pad_id=PAD).static_decoding is False


def test_compiled_decoding_asks_the_protocol_which_models_have_a_static_step() -> None:
    """seq2seq.decode.compiled branches on StaticStepping, never on a family's class: the encoder-decoder
    family implements it, the decoder-only family and an ensemble (whose members are asked) do not."""
    assert mismatches(tiny_model(), StaticStepping) == []
    assert not isinstance(tiny_decoder_only(12, pad_id=PAD), StaticStepping)
    assert not isinstance(Ensemble([tiny_model(), tiny_model(seed=1)]), StaticStepping)

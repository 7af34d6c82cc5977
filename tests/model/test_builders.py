"""build_model: argument validation, embedding sharing, named sizes and parameter counts."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from model_helpers import VOCAB, make_model
from tiny_models import TINY

from seq2seq.errors import UserError
from seq2seq.model import build_model, check_embedding_sharing, count_parameters, model_size

BASE: dict[str, Any] = {"src_vocab_size": 20, "tgt_vocab_size": 20, **TINY}
D, F = TINY["d_model"], TINY["ffn_dim"]
FFNS = TINY["encoder_layers"] + TINY["decoder_layers"]


@pytest.mark.parametrize(
    "overrides, names",
    [
        ({"n_heads": 3}, ["n_heads=3", f"d_model={D}"]),
        ({"positional": "absolute"}, ["positional='absolute'", "sinusoidal, learned, rope, alibi"]),
        ({"attention_backend": "flash"}, ["attention_backend='flash'", "sdpa, xformers, manual"]),
        ({"norm": "sandwich"}, ["norm='sandwich'", "pre, post"]),
        ({"activation": "tanh"}, ["activation='tanh'", "relu, gelu, swiglu"]),
        ({"downsample_mode": "max"}, ["downsample_mode='max'", "avg, conv"]),
        ({"window": 0}, ["window=0", "positive integer or None"]),
        ({"window": -2}, ["window=-2", "positive integer or None"]),
        ({"window": 2.5}, ["window=2.5", "positive integer"]),
        ({"cross_downsample": 0}, ["cross_downsample=0", "positive integer"]),
        ({"encoder_layers": 0}, ["encoder_layers=0", "positive integer"]),
        ({"d_model": 12, "n_heads": 4, "positional": "rope"}, ["rope", "even head dimension"]),
        ({"dropout": 1.0}, ["dropout=1.0", "[0, 1)"]),
        ({"pad_id": 20}, ["pad_id=20"]),
    ],
    ids=lambda value: str(value) if isinstance(value, dict) else "",
)
def test_invalid_arguments_raise_one_line_value_errors(overrides: dict, names: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        build_model(**{**BASE, **overrides})
    assert isinstance(info.value, UserError)
    message = str(info.value)
    assert "\n" not in message
    for name in names:
        assert name in message


def test_valid_edge_values_build() -> None:
    model = build_model(**{**BASE, "window": 1, "cross_downsample": 5, "d_model": 12, "n_heads": 3})
    assert model.config["window"] == 1 and model.config["cross_downsample"] == 5


def test_tied_embeddings_with_a_joint_vocabulary_share_one_parameter() -> None:
    model = build_model(**BASE)
    weight = model.decoder.embedding.weight
    assert model.encoder.embedding.weight is weight and model.output.weight is weight
    untied = build_model(**{**BASE, "share_embeddings": False, "share_decoder_output": False})
    assert count_parameters(untied) - count_parameters(model) == 2 * 20 * D  # encoder/decoder shared or not
    assert untied.output.weight is not untied.decoder.embedding.weight


def test_different_vocabularies_keep_a_separate_source_embedding() -> None:
    model = build_model(**{**BASE, "src_vocab_size": 30, "share_embeddings": False})
    assert model.encoder.embedding.weight.shape == (30, D)
    assert model.encoder.embedding.weight is not model.decoder.embedding.weight
    assert model.output.weight is model.decoder.embedding.weight
    assert count_parameters(model) == count_parameters(build_model(**BASE)) + 30 * D


def test_separate_vocabularies_of_equal_size_are_not_tied() -> None:
    model = build_model(**{**BASE, "share_embeddings": False})
    encoder, decoder = model.encoder.embedding.weight, model.decoder.embedding.weight
    assert encoder is not decoder and encoder.data_ptr() != decoder.data_ptr()
    assert not torch.equal(encoder, decoder)
    assert model.output.weight is decoder  # share_decoder_output still ties the target side
    assert count_parameters(model) == count_parameters(build_model(**BASE)) + 20 * D


@pytest.mark.parametrize(
    "overrides, names",
    [
        ({"src_vocab_size": 30}, ["share_embeddings=True", "src_vocab_size=30", "tgt_vocab_size=20"]),
        ({"share_decoder_output": False}, ["share_embeddings=True", "share_decoder_output=False"]),
    ],
)
def test_contradictory_sharing_is_a_one_line_error(overrides: dict, names: list[str]) -> None:
    with pytest.raises(UserError) as info:
        build_model(**{**BASE, **overrides})
    assert "\n" not in str(info.value) and all(name in str(info.value) for name in names)


def test_the_sharing_check_for_the_train_cli() -> None:
    check_embedding_sharing(True, joint_vocabulary=True)
    check_embedding_sharing(False, joint_vocabulary=False)
    with pytest.raises(UserError) as info:
        check_embedding_sharing(True, joint_vocabulary=False)
    message = str(info.value)
    assert "\n" not in message and "model.share_embeddings=false" in message and "joint" in message


def expected_parameters(
    *, vocab: int, d_model: int, ffn_dim: int, encoder_layers: int, decoder_layers: int, n_heads: int
) -> int:
    """Count by hand for a tied, joint-vocabulary, pre-norm, sinusoidal, relu model."""
    del n_heads  # heads split d_model; they add no parameters
    d, f = d_model, ffn_dim
    layer_norm = 2 * d
    self_attention = (d * 3 * d + 3 * d) + (d * d + d)  # fused qkv + output
    cross_attention = (d * d + d) + (d * 2 * d + 2 * d) + (d * d + d)  # q + fused kv + output
    ffn = (d * f + f) + (f * d + d)
    encoder_layer = self_attention + ffn + 2 * layer_norm
    decoder_layer = self_attention + cross_attention + ffn + 3 * layer_norm
    final_norms = 2 * layer_norm
    embedding = vocab * d
    return encoder_layers * encoder_layer + decoder_layers * decoder_layer + final_norms + embedding


def test_tiny_parameter_count_by_hand() -> None:
    tiny = model_size("tiny")
    assert tiny == {"d_model": 64, "n_heads": 4, "ffn_dim": 256, "encoder_layers": 2, "decoder_layers": 2}
    model = build_model(src_vocab_size=100, tgt_vocab_size=100, **tiny)
    # d=64, f=256: encoder layer 16640 + 33088 + 256, decoder layer 16640 + 16640 + 33088 + 384.
    by_hand = 2 * (16640 + 33088 + 256) + 2 * (16640 + 16640 + 33088 + 384) + 256 + 100 * 64
    assert by_hand == expected_parameters(vocab=100, **tiny) == 240_128
    assert count_parameters(model) == by_hand
    assert count_parameters(model, trainable_only=False) == by_hand


def test_small_parameter_count_and_the_paper_sizes() -> None:
    model = build_model(src_vocab_size=1000, tgt_vocab_size=1000, **model_size("small"))
    assert count_parameters(model) == expected_parameters(vocab=1000, **model_size("small"))
    assert model_size("base") == {
        "d_model": 512,
        "n_heads": 8,
        "ffn_dim": 2048,
        "encoder_layers": 6,
        "decoder_layers": 6,
    }
    assert model_size("big") == {
        "d_model": 1024,
        "n_heads": 16,
        "ffn_dim": 4096,
        "encoder_layers": 6,
        "decoder_layers": 6,
    }


def test_variant_parameter_counts() -> None:
    base = count_parameters(build_model(**BASE))
    assert count_parameters(build_model(**{**BASE, "norm": "post"})) == base - 2 * 2 * D  # no final norms
    assert (
        count_parameters(build_model(**{**BASE, "positional": "learned", "max_positions": 50}))
        == base + 2 * 50 * D
    )
    assert count_parameters(build_model(**{**BASE, "activation": "swiglu"})) == base + FFNS * (D * F + F)
    conv = build_model(**{**BASE, "cross_downsample": 2, "downsample_mode": "conv"})
    assert count_parameters(conv) == base + D * D * 2 + D  # one strided convolution (kernel 2) of the memory


def test_config_records_the_arguments_and_forward_shapes() -> None:
    model = make_model(positional="rope", window=2)
    assert (
        model.config["positional"] == "rope" and model.config["window"] == 2 and model.config["d_model"] == D
    )
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    tgt_in = torch.tensor([[1, 2, 3], [1, 4, 0]])
    assert model(src, tgt_in).shape == (2, 3, VOCAB)
    memory = model.encode(src)
    assert memory.states.shape == (2, 4, D)
    assert torch.equal(memory.keep, src != 0)

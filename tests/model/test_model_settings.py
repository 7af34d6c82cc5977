"""The settings Hugging Face's MarianMT and M2M100/NLLB models need (silu, scale_embeddings, output_bias,
sinusoid_layout, position_offset): what each computes, in every path of the encoder-decoder (full forward,
cached and static steps, cross-attention), their refusals, and defaults that build the models of before."""

from __future__ import annotations

import math
import re

import pytest
import torch
from model_helpers import PAD, TOL, VOCAB, batch, make_model
from torch import nn

from seq2seq.errors import UserError
from seq2seq.model import Seq2Seq, build_from_config

NEW_SETTINGS = ("sinusoid_layout", "position_offset", "scale_embeddings", "output_bias")
SETTINGS = [
    {"position_offset": 2},
    {"position_offset": 3, "positional": "learned"},
    {"sinusoid_layout": "fairseq", "position_offset": 2},
    {"position_offset": 2, "positional": "rope"},
    {"activation": "silu", "norm": "post"},
    {"scale_embeddings": False},
    {"output_bias": True},
    {"output_bias": True, "share_embeddings": False, "share_decoder_output": False},
    {  # M2M100 / NLLB: fairseq sinusoids counted from 2, relu, pre-norm, scaled embeddings
        "sinusoid_layout": "fairseq", "position_offset": 2, "activation": "relu", "norm": "pre",
    },
    {"activation": "silu", "norm": "post", "output_bias": True},  # MarianMT
]  # fmt: skip


def setting_id(settings: dict) -> str:
    return ",".join(f"{key}={value}" for key, value in settings.items())


def with_random_bias(model: Seq2Seq, seed: int = 7) -> Seq2Seq:
    """A bias of zeros (its value at init) would hide a path that drops it."""
    if model.output.bias is not None:
        with torch.no_grad():
            model.output.bias.copy_(
                torch.randn(model.output.bias.shape, generator=torch.Generator().manual_seed(seed))
            )
    return model


def sinusoids(positions: torch.Tensor, dim: int, *, fairseq: bool) -> torch.Tensor:
    """sin | cos halves with frequency i = 10000^(-i/(D/2)) (standard) or 10000^(-i/(D/2-1)) (fairseq),
    in float64 from math's own functions (not the code under test). Shapes: (T,) -> (T, dim)."""
    half = dim // 2
    steps = half - 1 if fairseq else half
    table = torch.zeros(len(positions), dim, dtype=torch.float64)
    for row, position in enumerate(positions.tolist()):
        for i in range(half):
            angle = position * 10000 ** (-i / steps)
            table[row, i], table[row, half + i] = math.sin(angle), math.cos(angle)
    return table.float()


class TableLookup(nn.Module):
    """Absolute positions read from a given table: row t is the vector of column t."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = table

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.table[positions]


def shifted_twin(model: Seq2Seq, tables: tuple[torch.Tensor, torch.Tensor], **settings) -> Seq2Seq:
    """`model`'s weights in a model without position_offset whose stacks read (encoder, decoder) `tables`
    instead of their own positions."""
    twin = make_model(**{**settings, "position_offset": 0})
    state = {k: v for k, v in model.state_dict().items() if ".positions.absolute.table" not in k}
    missing, unexpected = twin.load_state_dict(state, strict=False)
    assert not unexpected and all(".positions.absolute.table" in k for k in missing)
    twin.encoder.positions.absolute = TableLookup(tables[0])
    twin.decoder.positions.absolute = TableLookup(tables[1])
    return twin


@pytest.mark.parametrize("layout", ["standard", "fairseq"])
@pytest.mark.parametrize("offset", [1, 2, 5])
@torch.no_grad()
def test_sinusoidal_positions_with_an_offset_equal_a_table_shifted_by_it(layout: str, offset: int) -> None:
    settings = {"sinusoid_layout": layout}
    model = make_model(position_offset=offset, **settings)
    table = sinusoids(torch.arange(offset, offset + 64), 64, fairseq=layout == "fairseq")  # (64, D)
    twin = shifted_twin(model, (table, table), **settings)
    src, tgt_in = batch()
    keep = src != PAD
    torch.testing.assert_close(model.encode(src).states[keep], twin.encode(src).states[keep], **TOL)
    torch.testing.assert_close(model(src, tgt_in), twin(src, tgt_in), **TOL)
    torch.testing.assert_close(model.cross_attention(src, tgt_in), twin.cross_attention(src, tgt_in), **TOL)
    plain = make_model(**settings)  # the offset changes the outputs
    assert not torch.allclose(model(src, tgt_in), plain(src, tgt_in), **TOL)


@torch.no_grad()
def test_learned_positions_with_an_offset_read_their_table_from_row_offset() -> None:
    settings = {"positional": "learned"}
    model = make_model(position_offset=2, **settings)
    tables = [stack.positions.absolute.table.weight for stack in (model.encoder, model.decoder)]
    assert all(table.shape == (64 + 2, 64) for table in tables)  # max_positions (64) + offset rows
    twin = shifted_twin(model, (tables[0][2:], tables[1][2:]), **settings)
    src, tgt_in = batch(seed=3)
    torch.testing.assert_close(model(src, tgt_in), twin(src, tgt_in), **TOL)
    with pytest.raises(ValueError, match="max_positions=64"):  # the limit still counts tokens
        model.encode(torch.ones(1, 65, dtype=torch.long))


def full_and_steps(model: Seq2Seq, *, static: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The full forward's logits and those of decode_step one token at a time (growing or static caches)."""
    src, tgt_in = batch(seed=2)
    full = model(src, tgt_in)  # (B, T, V)
    model.static_step_function = model.static_step if static else None  # eager static caches
    try:
        state = model.init_state(model.encode(src), max_steps=tgt_in.shape[1])
        steps = [model.decode_step(tgt_in[:, t : t + 1], state)[0] for t in range(tgt_in.shape[1])]
    finally:
        model.static_step_function = None
    return full, torch.stack(steps, dim=1)


@pytest.mark.parametrize("static", [False, True], ids=["growing_caches", "static_caches"])
@pytest.mark.parametrize("settings", SETTINGS, ids=setting_id)
@torch.no_grad()
def test_cached_decoding_equals_full_forward(settings: dict, static: bool) -> None:
    model = with_random_bias(make_model(**settings))
    full, steps = full_and_steps(model, static=static)
    torch.testing.assert_close(steps, full, **TOL)


@torch.no_grad()
def test_output_bias_is_added_to_the_logits_of_every_path() -> None:
    model = with_random_bias(make_model(output_bias=True))
    assert model.output.bias.shape == (VOCAB,) and "output.bias" in model.state_dict()
    assert model.output.weight is model.decoder.embedding.weight  # still tied; the bias is apart
    src, tgt_in = batch()
    hidden = model(src, tgt_in, project=False)  # (B, T, D)
    torch.testing.assert_close(model(src, tgt_in), hidden @ model.output.weight.T + model.output.bias, **TOL)
    without = make_model(output_bias=False)
    without.load_state_dict({k: v for k, v in model.state_dict().items() if k != "output.bias"})
    torch.testing.assert_close(model(src, tgt_in), without(src, tgt_in) + model.output.bias, **TOL)


@torch.no_grad()
def test_unscaled_embeddings_equal_scaled_ones_of_a_table_divided_by_sqrt_d() -> None:
    untied = {"share_embeddings": False, "share_decoder_output": False}  # the output keeps its own weight
    model = make_model(scale_embeddings=False, **untied)
    src, tgt_in = batch()
    assert torch.equal(model.encoder.embedding(src), model.encoder.embedding.weight[src])
    scaled = make_model(**untied)
    scaled.load_state_dict(model.state_dict())
    for stack in (scaled.encoder, scaled.decoder):
        stack.embedding.weight.div_(8.0)  # sqrt(d_model = 64)
    torch.testing.assert_close(model(src, tgt_in), scaled(src, tgt_in), **TOL)
    assert not torch.allclose(model(src, tgt_in), make_model(**untied)(src, tgt_in), **TOL)


@torch.no_grad()
def test_silu_feed_forward_in_the_model_is_down_of_silu_of_up() -> None:
    ffn = make_model(activation="silu").encoder.layers[0].ffn
    x = torch.randn(2, 5, 64)
    expected = ffn.down(nn.functional.silu(ffn.up(x)))
    torch.testing.assert_close(ffn(x), expected, rtol=0, atol=0)


def test_defaults_build_the_models_of_before_and_old_configs_get_them() -> None:
    old = make_model(positional="learned")
    config = {key: value for key, value in old.config.items() if key not in NEW_SETTINGS}
    assert {key: old.config[key] for key in NEW_SETTINGS} == {
        "sinusoid_layout": "standard", "position_offset": 0, "scale_embeddings": True, "output_bias": False,
    }  # fmt: skip
    assert "output.bias" not in old.state_dict() and old.output.bias is None
    assert old.encoder.positions.absolute.table.weight.shape == (64, 64)
    torch.manual_seed(0)  # make_model's seed
    rebuilt = build_from_config(config)  # a checkpoint's model_config from before these settings
    assert rebuilt.config == old.config
    assert list(rebuilt.state_dict()) == list(old.state_dict())
    for (name, mine), theirs in zip(old.state_dict().items(), rebuilt.state_dict().values()):
        assert torch.equal(mine, theirs), name  # the same draws: the new settings consume no randomness


def test_build_from_config_rebuilds_every_new_setting() -> None:
    model = make_model(sinusoid_layout="fairseq", position_offset=2, scale_embeddings=False, output_bias=True)
    rebuilt = build_from_config(model.config)
    assert rebuilt.config == model.config
    assert set(rebuilt.state_dict()) == set(model.state_dict())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"activation": "swish"},
            "activation='swish' is not supported; choose one of relu, gelu, swiglu, silu",
        ),
        ({"scale_embeddings": "yes"}, "scale_embeddings='yes' must be true or false"),
        ({"output_bias": 1}, "output_bias=1 must be true or false"),
        (
            {"sinusoid_layout": "t2t"},
            "sinusoid_layout='t2t' is not supported; choose one of standard, fairseq",
        ),
        (
            {"sinusoid_layout": "fairseq", "positional": "rope"},
            "set positional=sinusoidal or sinusoid_layout",
        ),
        ({"sinusoid_layout": "fairseq", "d_model": 2, "n_heads": 1}, "needs d_model >= 4"),
        ({"position_offset": -1}, "position_offset=-1 must be a non-negative integer"),
        ({"position_offset": 1.5}, "position_offset=1.5 must be a non-negative integer"),
        ({"position_offset": True}, "position_offset=True must be a non-negative integer"),
    ],
)
def test_bad_values_are_one_line_errors(overrides: dict, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)) as error:
        make_model(**overrides)
    assert "\n" not in str(error.value)


def test_rope_and_alibi_ignore_the_offset() -> None:
    """They see only distances: a model with an offset computes exactly what one without does."""
    src, tgt_in = batch(seed=4)
    for positional in ("rope", "alibi"):
        with torch.no_grad():
            shifted = make_model(positional=positional, position_offset=5)(src, tgt_in)
            plain = make_model(positional=positional)(src, tgt_in)
        assert torch.equal(shifted, plain)

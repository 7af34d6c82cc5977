"""AdamW parameter groups, gradient clipping and the finiteness check on a tiny module."""

from __future__ import annotations

import math

import pytest
import torch
from omegaconf import OmegaConf
from tiny_models import tiny_model
from torch import nn

from seq2seq.errors import UserError
from seq2seq.nn.embeddings import TokenEmbedding
from seq2seq.train.optim import build_adamw, clip_gradients, fused_kernel_fits, no_decay_parameter_ids


class Tiny(nn.Module):
    """Embedding -> linear -> norm -> output projection tied to the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(7, 4)
        self.proj = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.out = nn.Linear(4, 7, bias=False)
        self.out.weight = self.embed.weight  # tied
        self.gain = nn.Parameter(torch.ones(()))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.proj(self.embed(tokens)))) * self.gain


def _group(optimizer: torch.optim.Optimizer, name: str) -> dict:
    (group,) = [g for g in optimizer.param_groups if g["name"] == name]
    return group


def test_groups_exempt_biases_norms_and_embeddings():
    model = Tiny()
    optimizer = build_adamw(model, lr=1e-3, weight_decay=0.1)
    decay = _group(optimizer, "decay")
    no_decay = _group(optimizer, "no_decay")
    assert [id(p) for p in decay["params"]] == [id(model.proj.weight)]
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    expected = {model.embed.weight, model.proj.bias, model.norm.weight, model.norm.bias, model.gain}
    assert {id(p) for p in no_decay["params"]} == {id(p) for p in expected}
    assert len(no_decay["params"]) == len(expected)  # the tied weight appears once
    assert no_decay_parameter_ids(model) == {id(p) for p in expected}


@pytest.mark.parametrize("tie", [True, False])
def test_transformer_groups(tie):
    model = tiny_model(11, share_embeddings=tie, share_decoder_output=tie)
    optimizer = build_adamw(model, lr=1e-3, weight_decay=0.1)
    no_decay = {id(p) for p in _group(optimizer, "no_decay")["params"]}
    decay = {id(p) for p in _group(optimizer, "decay")["params"]}
    embeddings = [m.weight for m in model.modules() if isinstance(m, TokenEmbedding)]
    assert embeddings and all(id(w) in no_decay for w in embeddings)
    assert all(p.ndim >= 2 for p in _group(optimizer, "decay")["params"])
    assert (id(model.output.weight) in decay) is not tie  # tied: it is the embedding table
    assert len(no_decay | decay) == len(list(model.parameters()))


def test_everything_decays_when_asked_and_frozen_parameters_are_left_out():
    model = Tiny()
    model.norm.requires_grad_(False)
    optimizer = build_adamw(model, lr=1e-3, weight_decay=0.1, no_decay_norm_and_bias=False)
    assert [g["name"] for g in optimizer.param_groups] == ["decay"]
    assert len(optimizer.param_groups[0]["params"]) == 4  # embed(tied), proj.weight, proj.bias, gain


def test_hyperparameters_reach_adamw_and_accept_listconfig_betas():
    betas = OmegaConf.create({"betas": [0.9, 0.997]}).betas
    optimizer = build_adamw(Tiny(), lr=2e-4, betas=betas, eps=1e-8, weight_decay=0.01)
    for group in optimizer.param_groups:
        assert group["lr"] == 2e-4 and group["betas"] == (0.9, 0.997) and group["eps"] == 1e-8
    model = Tiny()
    optimizer = build_adamw(model, lr=1e-2)
    model(torch.tensor([[1, 2, 3]])).sum().backward()
    before = model.proj.weight.detach().clone()
    optimizer.step()
    assert not torch.equal(before, model.proj.weight)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": -1.0},
        {"lr": 1e-3, "betas": (0.9,)},
        {"lr": 1e-3, "betas": (0.9, 1.0)},
        {"lr": 1e-3, "eps": 0.0},
        {"lr": 1e-3, "weight_decay": -0.1},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(UserError):
        build_adamw(Tiny(), **kwargs)


def test_frozen_model_is_a_user_error():
    with pytest.raises(UserError, match="no trainable"):
        build_adamw(Tiny().requires_grad_(False), lr=1e-3)


def _with_grads(*grads: list[float]) -> list[nn.Parameter]:
    params = [nn.Parameter(torch.zeros(len(g))) for g in grads]
    for p, g in zip(params, grads, strict=True):
        p.grad = torch.tensor(g)
    return params


def test_clip_gradients_returns_norm_before_clipping():
    params = _with_grads([3.0, 0.0], [0.0, 4.0])
    assert clip_gradients(params, max_norm=1.0) == pytest.approx(5.0)
    total = torch.cat([p.grad for p in params]).norm()
    assert total.item() == pytest.approx(1.0, rel=1e-5)

    params = _with_grads([3.0, 0.0], [0.0, 4.0])
    assert clip_gradients(params, max_norm=10.0) == pytest.approx(5.0)
    assert params[0].grad.tolist() == [3.0, 0.0]  # under the limit: untouched


@pytest.mark.parametrize("max_norm", [None, 0.0])
def test_clip_gradients_can_only_measure(max_norm):
    params = _with_grads([3.0, 0.0], [0.0, 4.0])
    params.append(nn.Parameter(torch.zeros(2)))  # no gradient: ignored
    assert clip_gradients(iter(params), max_norm=max_norm) == pytest.approx(5.0)
    assert params[1].grad.tolist() == [0.0, 4.0]
    assert clip_gradients([nn.Parameter(torch.zeros(1))], max_norm=1.0) == 0.0


@pytest.mark.parametrize("bad", [math.inf, math.nan])
@pytest.mark.parametrize("max_norm", [1.0, None])
def test_non_finite_gradients_are_reported_not_raised(bad, max_norm):
    params = _with_grads([1.0, bad], [2.0])
    assert not math.isfinite(clip_gradients(params, max_norm=max_norm))


def test_the_fused_update_is_torchs_for_loop_update_up_to_rounding():
    """The fused kernel runs where it exists (here: the CPU) and makes the same AdamW updates, weight
    decay and its exempt group included, as torch's per-tensor loop."""
    torch.manual_seed(0)
    fused_model, loop_model = Tiny(), Tiny()
    loop_model.load_state_dict(fused_model.state_dict())
    start = fused_model.proj.weight.detach().clone()
    fused = build_adamw(fused_model, lr=1e-2, weight_decay=0.1)
    loop = build_adamw(loop_model, lr=1e-2, weight_decay=0.1)
    for group in loop.param_groups:
        group["fused"] = None  # torch's default on a CPU: the loop
    assert all(g["fused"] for g in fused.param_groups)
    for step in range(5):
        tokens = torch.randint(0, 7, (2, 4), generator=torch.Generator().manual_seed(step))
        for model, optimizer in ((fused_model, fused), (loop_model, loop)):
            optimizer.zero_grad()
            model(tokens).pow(2).mean().backward()
            optimizer.step()
    for (name, a), b in zip(fused_model.state_dict().items(), loop_model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    assert not torch.allclose(fused_model.proj.weight, start, atol=1e-3)  # it did train


def test_parameters_where_torch_has_no_fused_kernel_get_the_loop():
    model = nn.Linear(3, 2, device="meta")
    assert not fused_kernel_fits(list(model.parameters()))
    assert all(not g["fused"] for g in build_adamw(model, lr=1e-3).param_groups)
    assert fused_kernel_fits(list(nn.Linear(3, 2).parameters()))

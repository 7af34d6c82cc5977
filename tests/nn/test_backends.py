"""Every attention backend against the manual reference and an independent loop reference."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest
import torch
from attention_reference import key_padding, loop_attention, qkv
from tiny_models import tiny_model

from seq2seq.nn import backends
from seq2seq.nn.backends import ATTENTION_BACKENDS, attend, build_keep

TOL = {"rtol": 1e-5, "atol": 1e-5}
HEADS = 2


@dataclass(frozen=True)
class Case:
    name: str
    tq: int = 7
    tk: int = 7
    lengths: tuple[int, ...] | None = None  # key padding (B, Tk)
    per_query_keep: bool = False  # a random (B, Tq, Tk) keep instead
    causal: bool = False
    window: int | None = None
    alibi: bool = False
    prefix: int = 0  # with causal: keys every query sees (a prefix LM's source)


CASES = [
    Case("padding", lengths=(7, 4)),
    Case("causal"),
    Case("causal_one_query_sees_all_keys", tq=1, tk=7),
    Case("causal_bottom_right", tq=3, tk=7),
    Case("alibi", alibi=True),
    Case("alibi_causal_bottom_right", tq=3, tk=7, causal=True, alibi=True),
    Case("window", window=3),
    Case("window_causal", window=3, causal=True),
    Case("window_causal_bottom_right", tq=2, tk=9, window=3, causal=True),
    Case("padding_window_alibi", lengths=(7, 5), window=2, alibi=True),
    Case("padding_causal_window_alibi", lengths=(7, 5), causal=True, window=3, alibi=True),
    Case("per_query_keep_alibi", per_query_keep=True, alibi=True),
    Case("per_query_keep_causal_window", tq=4, tk=6, per_query_keep=True, causal=True, window=4),
    Case("prefix_lm", causal=True, prefix=3),
    Case("prefix_lm_padding_alibi", lengths=(7, 5), causal=True, prefix=4, alibi=True),
    Case("prefix_lm_window", causal=True, prefix=4, window=3),
]


def alibi_by_hand(tq: int, tk: int) -> torch.Tensor:
    """-slope * |i - j| with bottom-right aligned query positions. Shapes: -> (H, Tq, Tk)."""
    slopes = torch.tensor([0.5, 0.25])
    q_pos = torch.arange(tq) + (tk - tq)
    distance = (q_pos[:, None] - torch.arange(tk)[None, :]).abs().float()
    return -slopes[:, None, None] * distance


def inputs(case: Case, *, seed: int = 0) -> tuple[torch.Tensor, ...]:
    q, k, v = qkv(2, HEADS, case.tq, case.tk, 8, seed=seed)
    keep = None
    if case.lengths is not None:
        keep = key_padding(list(case.lengths), case.tk)
    if case.per_query_keep:
        gen = torch.Generator().manual_seed(seed + 1)
        keep = torch.rand(2, case.tq, case.tk, generator=gen) < 0.6
        keep[:, :, -1] = True  # every query keeps its bottom-right key, so no row is empty
    bias = alibi_by_hand(case.tq, case.tk) if case.alibi else None
    return q, k, v, keep, bias


@pytest.mark.parametrize("backend", ATTENTION_BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backend_matches_manual_and_loop_reference(case: Case, backend: str) -> None:
    q, k, v, keep, bias = inputs(case)
    kwargs = {"keep": keep, "causal": case.causal, "window": case.window, "bias": bias, "prefix": case.prefix}
    out = attend(q, k, v, attention_backend=backend, **kwargs)
    assert out.shape == (2, HEADS, case.tq, 8)
    torch.testing.assert_close(out, attend(q, k, v, attention_backend="manual", **kwargs), **TOL)
    torch.testing.assert_close(out, loop_attention(q, k, v, **kwargs), **TOL)


@pytest.mark.parametrize("backend", ATTENTION_BACKENDS)
def test_unmasked_fast_path_matches_reference(backend: str) -> None:
    q, k, v = qkv(2, HEADS, 5, 5, 8, seed=3)
    torch.testing.assert_close(attend(q, k, v, attention_backend=backend), loop_attention(q, k, v), **TOL)
    torch.testing.assert_close(
        attend(q, k, v, causal=True, attention_backend=backend), loop_attention(q, k, v, causal=True), **TOL
    )


@pytest.mark.parametrize("backend", ATTENTION_BACKENDS)
def test_gradients_agree_with_manual(backend: str) -> None:
    case = Case("grad", tq=5, tk=6, lengths=(6, 4), causal=True, window=3, alibi=True)
    grads = {}
    for name in (backend, "manual"):
        q, k, v, keep, _ = inputs(case, seed=5)
        bias = alibi_by_hand(case.tq, case.tk)
        leaves = [t.requires_grad_() for t in (q, k, v, bias)]
        out = attend(q, k, v, keep=keep, causal=True, window=3, bias=bias, attention_backend=name)
        weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
        (out * weights).sum().backward()
        grads[name] = [t.grad for t in leaves]
    for got, want in zip(grads[backend], grads["manual"]):
        torch.testing.assert_close(got, want, **TOL)


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("backend", ATTENTION_BACKENDS)
def test_fully_masked_queries_output_zeros_with_finite_gradients(backend: str, with_bias: bool) -> None:
    q, k, v = qkv(3, HEADS, 4, 5, 8, seed=7)
    keep = torch.ones(3, 4, 5, dtype=torch.bool)
    keep[0, 1] = False  # one query of row 0 sees nothing
    keep[1, :, 2:] = False  # row 1: partial padding, every query still sees two keys
    keep[2] = False  # row 2: a sentence of nothing but padding
    bias = alibi_by_hand(4, 5).requires_grad_() if with_bias else None
    leaves = [t.requires_grad_() for t in (q, k, v)]
    out = attend(q, k, v, keep=keep, bias=bias, attention_backend=backend)
    assert torch.equal(out[0, :, 1], torch.zeros(HEADS, 8))
    assert torch.equal(out[2], torch.zeros(HEADS, 4, 8))
    torch.testing.assert_close(out, loop_attention(q, k, v, keep=keep, bias=bias), **TOL)
    out.square().sum().backward()
    for tensor in leaves + ([bias] if with_bias else []):
        assert torch.isfinite(tensor.grad).all()
    # Nothing flows into the fully masked row's keys, values or query.
    assert torch.equal(leaves[0].grad[2], torch.zeros_like(leaves[0].grad[2]))
    assert torch.equal(leaves[2].grad[2], torch.zeros_like(leaves[2].grad[2]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "case", CASES + [Case("unmasked"), Case("unmasked_causal", causal=True)], ids=lambda c: c.name
)
def test_low_precision_cpu_path_matches_float32_reference(case: Case, dtype: torch.dtype) -> None:
    q, k, v, keep, bias = inputs(case)
    kwargs = {"keep": keep, "causal": case.causal, "window": case.window}
    low = [t.to(dtype) for t in (q, k, v)]
    out = attend(*low, bias=None if bias is None else bias.to(dtype), attention_backend="sdpa", **kwargs)
    assert out.dtype == dtype
    expected = loop_attention(*(t.float() for t in low), bias=bias, **kwargs)
    torch.testing.assert_close(out.float(), expected, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_fully_masked_rows_are_zero_with_finite_gradients(dtype: torch.dtype) -> None:
    q, k, v = (t.to(dtype).requires_grad_() for t in qkv(2, HEADS, 3, 4, 8, seed=2))
    keep = torch.ones(2, 3, 4, dtype=torch.bool)
    keep[0, 2] = False
    keep[1] = False
    out = attend(q, k, v, keep=keep, bias=alibi_by_hand(3, 4).to(dtype), attention_backend="sdpa")
    assert torch.equal(out[0, :, 2], torch.zeros(HEADS, 8, dtype=dtype))
    assert torch.equal(out[1], torch.zeros(HEADS, 3, 8, dtype=dtype))
    out.float().square().sum().backward()
    for tensor in (q, k, v):
        assert torch.isfinite(tensor.grad).all()
    assert torch.equal(k.grad[1], torch.zeros_like(k.grad[1]))


def test_build_keep_combines_padding_causality_and_window_bottom_right() -> None:
    keep = key_padding([5, 3], 5)
    mask = build_keep(keep, causal=True, window=2, tq=2, tk=5, device=torch.device("cpu"))
    assert mask.shape == (2, 1, 2, 5)
    # Query 0 sits at position 3, query 1 at position 4; window 2 = itself and one key back.
    expected_full = torch.tensor([[0, 0, 1, 1, 0], [0, 0, 0, 1, 1]], dtype=torch.bool)
    assert torch.equal(mask[0, 0], expected_full)
    assert torch.equal(mask[1, 0], expected_full & keep[1])
    assert build_keep(None, causal=False, window=None, tq=2, tk=5, device=torch.device("cpu")) is None


def test_build_keep_prefix_lets_every_query_see_the_first_keys() -> None:
    mask = build_keep(None, causal=True, window=None, tq=4, tk=4, device=torch.device("cpu"), prefix=2)
    expected = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(mask[0, 0], expected)


def test_unknown_backend_is_rejected() -> None:
    q, k, v = qkv(1, 1, 2, 2, 4)
    with pytest.raises(ValueError, match="sdpa, xformers, manual"):
        attend(q, k, v, keep=key_padding([1], 2), attention_backend="flash")


def test_xformers_falls_back_to_sdpa_on_cpu_with_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    backends._log_fallback.cache_clear()
    caplog.set_level(logging.INFO, logger=backends.__name__)
    q, k, v, keep, bias = inputs(CASES[-2])
    usable, why = backends.xformers_usable(q)
    assert not usable and why
    for _ in range(4):  # several layers and steps ask; the reason is logged once
        out = attend(q, k, v, keep=keep, bias=bias, attention_backend="xformers")
        assert torch.equal(out, attend(q, k, v, keep=keep, bias=bias, attention_backend="sdpa"))
    lines = [r for r in caplog.records if "xformers" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.INFO
    assert why in lines[0].getMessage()
    backends._log_fallback.cache_clear()


def test_missing_xformers_is_a_one_line_error_at_build_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(backends, "_xformers_ops", lambda: None)
    assert not backends.xformers_installed()
    with pytest.raises(ValueError, match="xformers") as info:
        tiny_model(11, attention_backend="xformers")
    message = str(info.value)
    assert "\n" not in message and "attention" in message and "sdpa" in message
    # A direct call still works: it falls back and says why.
    backends._log_fallback.cache_clear()
    caplog.set_level(logging.INFO, logger=backends.__name__)
    q, k, v = qkv(1, 1, 3, 3, 4)
    assert torch.equal(
        attend(q, k, v, attention_backend="xformers"), attend(q, k, v, attention_backend="sdpa")
    )
    assert [r.getMessage() for r in caplog.records if "xformers" in r.getMessage()] == [
        "attention backend xformers unavailable (xformers is not installed); using PyTorch SDPA instead"
    ]
    backends._log_fallback.cache_clear()


@pytest.mark.skipif(
    not torch.cuda.is_available() or not backends.xformers_installed(), reason="needs CUDA xFormers"
)
def test_xformers_kernels_match_reference_on_cuda() -> None:
    for case in CASES:
        q, k, v, keep, bias = inputs(case)
        expected = loop_attention(q, k, v, keep=keep, causal=case.causal, window=case.window, bias=bias)
        on_gpu = [None if t is None else t.cuda() for t in (q, k, v, keep, bias)]
        out = attend(
            *on_gpu[:3],
            keep=on_gpu[3],
            bias=on_gpu[4],
            causal=case.causal,
            window=case.window,
            attention_backend="xformers",
        )
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4, msg=case.name)

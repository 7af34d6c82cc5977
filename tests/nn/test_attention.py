"""Local (sliding-window) attention and the attention modules against dense references."""

from __future__ import annotations

import math

import pytest
import torch
from attention_reference import band_keep, key_padding, loop_attention, qkv
from torch.profiler import ProfilerActivity, profile

from seq2seq.nn.attention import AttentionContext, CrossAttention, SelfAttention, merge_heads, split_heads
from seq2seq.nn.backends import ATTENTION_BACKENDS, attend, local_attend
from seq2seq.nn.positional import RotaryEmbedding, alibi_bias, alibi_slopes, apply_rotary

TOL = {"rtol": 1e-5, "atol": 1e-5}
WINDOW = 4


def dense_band_reference(q, k, v, *, window, causal, keep=None, slopes=None):
    """Full attention under an explicit (T, T) band mask and dense ALiBi bias, via the manual backend."""
    length = q.shape[2]
    band = band_keep(length, length, causal=causal, window=window)  # (T, T)
    mask = band[None].expand(q.shape[0], -1, -1).clone()  # (B, T, T)
    if keep is not None:
        mask &= keep[:, None, :]
    positions = torch.arange(length)
    bias = None if slopes is None else alibi_bias(slopes, positions, positions)  # (H, T, T)
    return attend(q, k, v, keep=mask, bias=bias, attention_backend="manual"), mask, bias


@pytest.mark.parametrize("length", [3, 4, 12, 13], ids=lambda n: f"T{n}")
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
@pytest.mark.parametrize("alibi", [False, True], ids=["plain", "alibi"])
def test_local_attend_equals_dense_band_mask(length: int, causal: bool, padded: bool, alibi: bool) -> None:
    q, k, v = qkv(2, 2, length, length, 8, seed=length)
    keep = key_padding([length, max(1, length - 5)], length) if padded else None
    slopes = alibi_slopes(2) if alibi else None
    expected, mask, bias = dense_band_reference(
        q, k, v, window=WINDOW, causal=causal, keep=keep, slopes=slopes
    )
    torch.testing.assert_close(expected, loop_attention(q, k, v, keep=mask, bias=bias), **TOL)
    for backend in ATTENTION_BACKENDS:
        out = local_attend(
            q, k, v, window=WINDOW, causal=causal, keep=keep, alibi_slopes=slopes, attention_backend=backend
        )
        torch.testing.assert_close(out, expected, **TOL, msg=backend)
        dense = attend(q, k, v, keep=keep, causal=causal, window=WINDOW, bias=bias, attention_backend=backend)
        torch.testing.assert_close(dense, expected, **TOL, msg=backend)


@pytest.mark.parametrize("window", [1, 2, 5])
def test_local_attend_other_windows_and_empty_rows(window: int) -> None:
    q, k, v = (t.requires_grad_() for t in qkv(3, 2, 11, 11, 4, seed=window))
    keep = key_padding([11, 6, 0], 11)  # the last row is nothing but padding
    for causal in (False, True):
        q.grad = k.grad = v.grad = None
        out = local_attend(q, k, v, window=window, causal=causal, keep=keep, alibi_slopes=alibi_slopes(2))
        expected, _, _ = dense_band_reference(
            q, k, v, window=window, causal=causal, keep=keep, slopes=alibi_slopes(2)
        )
        torch.testing.assert_close(out, expected, **TOL)
        assert torch.equal(out[2], torch.zeros_like(out[2]))
        out.square().sum().backward()
        assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
        assert torch.equal(k.grad[2], torch.zeros_like(k.grad[2]))


def test_local_attend_gradients_match_dense() -> None:
    grads = []
    for local in (True, False):
        q, k, v = (t.requires_grad_() for t in qkv(2, 2, 10, 10, 4, seed=11))
        keep = key_padding([10, 7], 10)
        if local:
            out = local_attend(q, k, v, window=3, causal=True, keep=keep, alibi_slopes=alibi_slopes(2))
        else:
            out, _, _ = dense_band_reference(
                q, k, v, window=3, causal=True, keep=keep, slopes=alibi_slopes(2)
            )
        (out * torch.randn(out.shape, generator=torch.Generator().manual_seed(1))).sum().backward()
        grads.append([q.grad, k.grad, v.grad])
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, **TOL)


def peak_cpu_bytes(fn) -> int:
    """Largest amount of CPU memory held at once by allocations made inside `fn` (profiler events)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(
        (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    )
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def test_local_attention_peak_memory_is_linear_not_quadratic() -> None:
    length, heads, head_dim, window = 8192, 2, 16, 64
    q, k, v = qkv(1, heads, length, length, head_dim, seed=0)
    local_peak = peak_cpu_bytes(lambda: local_attend(q, k, v, window=window, causal=False))
    full_peak = peak_cpu_bytes(lambda: attend(q, k, v, window=window))  # materialises the (T, T) band
    assert full_peak >= length * length  # at least one byte per (query, key) pair
    assert local_peak < full_peak / 8, (local_peak, full_peak)
    # Linear: a few copies of q, k, v per block and a (C, span) mask per block, far from T^2.
    assert local_peak < 16 * 3 * q.numel() * q.element_size()


def test_self_attention_matches_explicit_computation_on_local_and_dense_paths() -> None:
    torch.manual_seed(0)
    d_model, heads = 16, 4
    for length in (5, 13):  # 5 <= 2W takes the dense path, 13 > 2W the blockwise one
        module = SelfAttention(d_model, heads, window=3).eval()
        x = torch.randn(2, length, d_model)
        keep = key_padding([length, length - 2], length)
        positions = torch.arange(length)
        rotary = RotaryEmbedding(d_model // heads)
        slopes = alibi_slopes(heads)
        context = AttentionContext(
            keep=keep,
            causal=False,
            rope=rotary(positions),
            alibi_slopes=slopes,
            q_positions=positions,
            k_positions=positions,
        )
        out = module(x, context)

        w_q, w_k, w_v = module.qkv.weight.chunk(3)
        b_q, b_k, b_v = module.qkv.bias.chunk(3)
        cos, sin = rotary(positions)
        q = apply_rotary(split_heads(x @ w_q.T + b_q, heads), cos, sin)
        k = apply_rotary(split_heads(x @ w_k.T + b_k, heads), cos, sin)
        v = split_heads(x @ w_v.T + b_v, heads)
        bias = alibi_bias(slopes, positions, positions)
        attended = loop_attention(q, k, v, keep=keep, window=3, bias=bias)
        expected = module.out(merge_heads(attended))
        torch.testing.assert_close(out, expected, **TOL)


def test_cross_attention_probabilities_and_output() -> None:
    torch.manual_seed(0)
    module = CrossAttention(16, 2).eval()
    x, memory = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    keep = key_padding([5, 2], 5)
    memory_kv = module.project_memory(memory)
    context = AttentionContext(keep=keep)
    probs = module.probabilities(x, memory_kv, context)  # (B, H, T, S)
    assert probs.shape == (2, 2, 3, 5)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 2, 3), **TOL)
    assert torch.equal(probs[1, :, :, 2:], torch.zeros(2, 3, 3))
    q = split_heads(module.q(x), 2)
    scores = (q @ memory_kv[0].transpose(-1, -2) / math.sqrt(8)).masked_fill(~keep[:, None, None], -math.inf)
    torch.testing.assert_close(probs, scores.softmax(-1), **TOL)
    torch.testing.assert_close(
        module(x, memory_kv, context), module.out(merge_heads(probs @ memory_kv[1])), **TOL
    )

"""Attention kernels behind one signature, and the only place masks change form.

Every backend computes softmax(q k^T / sqrt(Dh) + bias) v over the keys that are *kept*:
    keep:   True = attend. (B, Tk) for key padding or (B, Tq, Tk) for per-query masks.
    causal: a flag, bottom-right aligned: query i sees keys j <= i + (Tk - Tq), so a single
            cached decoding step (Tq = 1) sees every key.
    prefix: with causal, the first `prefix` keys are seen by every query (a prefix LM: the source of
            a decoder-only model attends bidirectionally, its target causally).
    window: local attention of width W: query i sees keys at distance < W (causal: the W most
            recent keys, itself included).
A query that sees no key at all (possible only at padded positions) outputs zeros on every backend.

`local_attend` computes sliding-window self-attention block by block, so memory grows linearly
with length instead of building a (T, T) mask.
"""

from __future__ import annotations

import functools
import logging
import math

import torch
import torch.nn.functional as F
from torch import Tensor

log = logging.getLogger(__name__)

ATTENTION_BACKENDS = ("sdpa", "xformers", "manual")
CPU_MATMUL_MAX_QUERIES = 4  # on CPU, "sdpa" computes attention for this few queries with plain matmuls


@functools.cache
def _xformers_ops():
    """The one guarded import of the optional xFormers dependency, done only when asked for."""
    try:
        import xformers.ops as xops
    except Exception:
        return None
    return xops


def xformers_installed() -> bool:
    return _xformers_ops() is not None


def xformers_usable(q: Tensor) -> tuple[bool, str]:
    """Whether xFormers can run on these tensors, and if not, why (for one log line)."""
    if _xformers_ops() is None:
        return False, "xformers is not installed"
    if not q.is_cuda:
        return False, f"xformers has no kernels for {q.device.type} tensors"
    return True, ""


def build_keep(
    keep: Tensor | None,
    *,
    causal: bool,
    window: int | None,
    tq: int,
    tk: int,
    device: torch.device,
    prefix: int = 0,
) -> Tensor | None:
    """Combine key padding, causality (with its bidirectional prefix) and window into one boolean mask
    (None = attend to everything).

    Shapes:
        keep: (B, Tk) or (B, Tq, Tk) or None -> (B or 1, 1, Tq, Tk) or None
    """
    combined = None
    causal = causal and tq > 1  # a single query sits after every key: causality hides nothing
    if causal or window is not None:
        shift = tk - tq  # query i sits at key position i + shift
        structural = torch.ones(tq, tk, dtype=torch.bool, device=device)
        if causal:
            structural = structural.tril(shift)
            structural[:, :prefix] = True
        if window is not None:
            structural = structural.tril(shift + window - 1).triu(shift - window + 1)
        combined = structural[None, None]  # (1, 1, Tq, Tk)
    if keep is not None:
        padding = keep[:, None, None, :] if keep.dim() == 2 else keep[:, None]  # (B, 1, 1|Tq, Tk)
        combined = padding if combined is None else combined & padding
    return combined


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    keep: Tensor | None = None,
    causal: bool = False,
    window: int | None = None,
    prefix: int = 0,
    bias: Tensor | None = None,
    dropout_p: float = 0.0,
    attention_backend: str = "sdpa",
) -> Tensor:
    """Dense attention on the chosen `attention_backend` (one of ATTENTION_BACKENDS).

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, H, Tk, Dh); bias: (H, Tq, Tk) or (B, H, Tq, Tk) -> (B, H, Tq, Dh)
    """
    if attention_backend == "xformers":
        usable, why = xformers_usable(q)
        if not usable:
            _log_fallback(why)
            attention_backend = "sdpa"
    if attention_backend not in ATTENTION_BACKENDS:
        raise ValueError(
            f"unknown attention backend {attention_backend!r}; choose one of {', '.join(ATTENTION_BACKENDS)}"
        )
    tq, tk = q.shape[-2], k.shape[-2]
    on_cpu = q.device.type == "cpu"
    low_precision_cpu = on_cpu and q.dtype in (torch.bfloat16, torch.float16)
    # PyTorch's CPU SDPA kernels are slower than two matmuls and a softmax for (a) bf16/fp16, forward
    # and backward; (b) the few queries of a cached decoding step, where the flash kernel's per-call
    # cost dominates. Both take the direct matmul path (figures: benchmarks/results.md).
    matmul_on_cpu = low_precision_cpu or (on_cpu and tq <= CPU_MATMUL_MAX_QUERIES)
    if (
        attention_backend == "sdpa"
        and not matmul_on_cpu
        and keep is None
        and bias is None
        and window is None
        and (not causal or (tq == tk and not prefix))
    ):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=causal and tq > 1)
    mask = build_keep(keep, causal=causal, window=window, tq=tq, tk=tk, device=q.device, prefix=prefix)
    if attention_backend == "xformers":
        return _xformers(q, k, v, mask=mask, bias=bias, dropout_p=dropout_p)
    if attention_backend == "manual":
        return manual_attention(q, k, v, mask=mask, bias=bias, dropout_p=dropout_p)
    if matmul_on_cpu:
        return matmul_attention(q, k, v, mask=mask, bias=bias, dropout_p=dropout_p)
    attn_mask = mask
    if bias is not None:
        attn_mask = bias.to(q.dtype)
        if mask is not None:
            attn_mask = attn_mask.masked_fill(~mask, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)


def matmul_attention(
    q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None, bias: Tensor | None, dropout_p: float = 0.0
) -> Tensor:
    """Attention as matmul-softmax-matmul in the inputs' dtype; rows with no kept key output zeros.

    Masked scores get the dtype's most negative finite value rather than -inf, so a fully masked row
    stays finite in both directions (it is zeroed after the softmax).

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, H, Tk, Dh); mask: broadcastable to (B, H, Tq, Tk) -> (B, H, Tq, Dh)
    """
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1)
    if mask is not None:
        probs = probs * mask.any(dim=-1, keepdim=True)  # (B|1, 1, Tq, 1): zero rows that see nothing
    if dropout_p > 0:
        probs = F.dropout(probs, p=dropout_p)
    return probs @ v


def manual_attention(
    q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None, bias: Tensor | None, dropout_p: float = 0.0
) -> Tensor:
    """The plain reference the other backends are tested against: explicit scores and softmax.

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, H, Tk, Dh); mask: broadcastable to (B, H, Tq, Tk) -> (B, H, Tq, Dh)
    """
    scores = attention_probabilities(q, k, mask=mask, bias=bias)  # (B, H, Tq, Tk)
    if dropout_p > 0:
        scores = F.dropout(scores, p=dropout_p)
    return scores.to(v.dtype) @ v


def attention_probabilities(q: Tensor, k: Tensor, *, mask: Tensor | None, bias: Tensor | None) -> Tensor:
    """softmax(q k^T / sqrt(Dh) + bias) over kept keys, in float32; rows with no kept key are zero.

    Shapes:
        q: (B, H, Tq, Dh); k: (B, H, Tk, Dh) -> (B, H, Tq, Tk)
    """
    scores = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, H, Tq, Tk)
    if bias is not None:
        scores = scores + bias.float()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)


def local_attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    window: int,
    causal: bool,
    keep: Tensor | None = None,
    alibi_slopes: Tensor | None = None,
    dropout_p: float = 0.0,
    attention_backend: str = "sdpa",
) -> Tensor:
    """Sliding-window self-attention in blocks of `window` queries: O(T * W) memory, not O(T^2).

    Each block of C = W queries attends to the C + 2(W-1) keys around it (C + W - 1 when causal);
    the blocks become a batch dimension and run through `attend` with a small per-block mask.

    Shapes:
        q, k, v: (B, H, T, Dh); keep: (B, T) or None; alibi_slopes: (H,) or None -> (B, H, T, Dh)
    """
    batch, heads, length, head_dim = q.shape
    block = window
    n_blocks = math.ceil(length / block)
    left, right = window - 1, 0 if causal else window - 1
    span = block + left + right  # keys seen by one block
    tail = n_blocks * block - length  # padding that makes T a multiple of the block size

    q_blocks = F.pad(q, (0, 0, 0, tail)).view(batch, heads, n_blocks, block, head_dim)  # (B, H, N, C, Dh)
    k_blocks = _unfold_keys(k, left, right + tail, span, block)  # (B, H, N, span, Dh)
    v_blocks = _unfold_keys(v, left, right + tail, span, block)  # (B, H, N, span, Dh)

    key_valid = torch.ones(batch, length, dtype=torch.bool, device=q.device) if keep is None else keep
    key_valid = F.pad(key_valid, (left, right + tail), value=False).unfold(1, span, block)  # (B, N, span)
    offset = (
        torch.arange(block, device=q.device)[:, None] - torch.arange(span, device=q.device)[None, :] + left
    )
    band = (offset >= 0) & (offset < window) if causal else offset.abs() < window  # (C, span)
    block_keep = band[None, None] & key_valid[:, :, None, :]  # (B, N, C, span)

    bias = None
    if alibi_slopes is not None:
        bias = -alibi_slopes[:, None, None] * offset.abs().float()  # (H, C, span); offset = i - j

    def merge(x: Tensor) -> Tensor:  # (B, H, N, L, Dh) -> (B*N, H, L, Dh)
        return x.transpose(1, 2).reshape(batch * n_blocks, heads, x.shape[3], head_dim)

    out = attend(
        merge(q_blocks),
        merge(k_blocks),
        merge(v_blocks),
        keep=block_keep.reshape(batch * n_blocks, block, span),
        bias=bias,
        dropout_p=dropout_p,
        attention_backend=attention_backend,
    )  # (B*N, H, C, Dh)
    out = out.view(batch, n_blocks, heads, block, head_dim).transpose(1, 2)  # (B, H, N, C, Dh)
    return out.reshape(batch, heads, n_blocks * block, head_dim)[:, :, :length]


def _unfold_keys(x: Tensor, left: int, right: int, span: int, step: int) -> Tensor:
    """Overlapping windows of keys. Shapes: (B, H, T, Dh) -> (B, H, N, span, Dh)."""
    padded = F.pad(x, (0, 0, left, right))  # (B, H, left + T + right, Dh)
    return padded.unfold(2, span, step).transpose(-1, -2)  # (B, H, N, span, Dh)


def _xformers(
    q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None, bias: Tensor | None, dropout_p: float
) -> Tensor:
    """xFormers memory-efficient attention; it wants (B, T, H, Dh) and an additive float bias.

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, H, Tk, Dh); mask: broadcastable to (B, H, Tq, Tk) -> (B, H, Tq, Dh)
    """
    tq, tk = q.shape[-2], k.shape[-2]
    attn_bias = None
    if mask is not None or bias is not None:
        shape = (q.shape[0], q.shape[1], tq, tk)
        # xFormers needs the bias rows 8-aligned in memory: allocate wider, then slice.
        storage = torch.zeros(*shape[:-1], math.ceil(tk / 8) * 8, dtype=q.dtype, device=q.device)
        attn_bias = storage[..., :tk]
        if bias is not None:
            attn_bias.copy_(bias.expand(shape))
        if mask is not None:
            # A query with no kept key would turn into NaN here: let it see everything, then zero it.
            empty = ~mask.any(dim=-1, keepdim=True)  # (B|1, 1, Tq, 1)
            attn_bias.masked_fill_(~(mask | empty).expand(shape), float("-inf"))
    out = (
        _xformers_ops()
        .memory_efficient_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_bias=attn_bias, p=dropout_p
        )
        .transpose(1, 2)
    )  # (B, H, Tq, Dh)
    if mask is not None:
        out = out.masked_fill(empty, 0.0)
    return out


@functools.cache
def _log_fallback(why: str) -> None:
    """One log line per reason, however many layers and steps ask."""
    log.info("attention backend xformers unavailable (%s); using PyTorch SDPA instead", why)

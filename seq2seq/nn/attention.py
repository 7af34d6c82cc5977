"""Multi-head self- and cross-attention with fused projections.

Positional machinery arrives ready-made in an `AttentionContext`, built once per stack and
forward and handed to every layer, so layers never recompute RoPE tables or ALiBi biases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.nn.backends import attend, attention_probabilities, build_keep, local_attend
from seq2seq.nn.kv_cache import KVCache
from seq2seq.nn.linear import Linear
from seq2seq.nn.packing import Packing
from seq2seq.nn.positional import alibi_bias, apply_rotary


@dataclass
class AttentionContext:
    """Everything a layer needs to know about positions and masking for one attention call.

    keep:         (B, Tk) True = attend, or None when every key is real.
    causal:       queries see only earlier keys (bottom-right aligned for cached decoding).
    prefix:       with causal, every query also sees the first `prefix` keys (prefix LM).
    rope:         cos, sin tables (Tq, Dh) for the new tokens' positions, or None.
    alibi_slopes: (H,) per-head slopes, or None.
    q_positions:  (Tq,) positions of the queries; k_positions: (Tk,) of all keys (cache included).
    packing:      set when the layers' inputs are the real tokens only, (N, D) rows (see nn/packing.py).
    """

    keep: Tensor | None = None
    causal: bool = False
    prefix: int = 0
    rope: tuple[Tensor, Tensor] | None = None
    alibi_slopes: Tensor | None = None
    q_positions: Tensor | None = None
    k_positions: Tensor | None = None
    packing: Packing | None = None
    _bias: Tensor | None = field(default=None, repr=False)

    def dense_bias(self) -> Tensor | None:
        """ALiBi bias (H, Tq, Tk), computed on first use and shared by all layers."""
        if self.alibi_slopes is None:
            return None
        if self._bias is None:
            self._bias = alibi_bias(self.alibi_slopes, self.q_positions, self.k_positions)
        return self._bias


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """Shapes: (B, T, D) -> (B, H, T, Dh)."""
    batch, length, dim = x.shape
    return x.view(batch, length, n_heads, dim // n_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """Shapes: (B, H, T, Dh) -> (B, T, D)."""
    batch, heads, length, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * head_dim)


def _init_fused(linear: nn.Linear, parts: int) -> None:
    """Xavier-initialise each of the fused q/k/v blocks as if it were its own (D, D) projection."""
    for chunk in linear.weight.data.chunk(parts, dim=0):
        nn.init.xavier_uniform_(chunk)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


class SelfAttention(nn.Module):
    """Self-attention with one fused QKV projection, optional sliding window and KV cache."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        dropout: float = 0.0,
        attention_backend: str = "sdpa",
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.dropout = dropout
        self.attention_backend = attention_backend
        self.window = window
        self.qkv = Linear(d_model, 3 * d_model)
        self.out = Linear(d_model, d_model)
        _init_fused(self.qkv, 3)
        _init_fused(self.out, 1)

    def forward(self, x: Tensor, context: AttentionContext, cache: KVCache | None = None) -> Tensor:
        """Shapes: x (B, T, D) -> (B, T, D); packed (context.packing): (N, D) -> (N, D).

        With a cache, x holds only the new tokens.
        """
        qkv = self.qkv(x)  # (B, T, 3D) or (N, 3D)
        if context.packing is not None:
            qkv = context.packing.unpack(qkv)  # (B, T, 3D), zeros at padding
        q, k, v = split_heads(qkv, 3 * self.n_heads).chunk(3, dim=1)  # each (B, H, T, Dh)
        if context.rope is not None:
            cos, sin = context.rope
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H, Tk, Dh): all keys so far
        out = merge_heads(self._attend(q, k, v, context))  # (B, T, D)
        if context.packing is not None:
            out = context.packing.pack(out)  # (N, D)
        return self.out(out)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, context: AttentionContext) -> Tensor:
        dropout_p = self.dropout if self.training else 0.0
        tq, tk = q.shape[-2], k.shape[-2]
        window = self.window
        if window is not None and tq == tk and tq > 2 * window and not context.prefix:
            return local_attend(
                q,
                k,
                v,
                window=window,
                causal=context.causal,
                keep=context.keep,
                alibi_slopes=context.alibi_slopes,
                dropout_p=dropout_p,
                attention_backend=self.attention_backend,
            )
        keep, bias = context.keep, context.dense_bias()
        if window is not None and tk > tq + window - 1 and context.causal:
            # Cached decoding: only the last tq + W - 1 keys can be visible.
            first = tk - (tq + window - 1)
            k, v = k[:, :, first:], v[:, :, first:]
            keep = None if keep is None else keep[..., first:]
            bias = None if bias is None else bias[..., first:]
        return attend(
            q,
            k,
            v,
            keep=keep,
            causal=context.causal,
            window=window,
            prefix=context.prefix,
            bias=bias,
            dropout_p=dropout_p,
            attention_backend=self.attention_backend,
        )


def _group_queries(q: Tensor, group: int) -> Tensor:
    """Stack each G consecutive rows' queries into one row. Shapes: (M * G, H, T, Dh) -> (M, H, G * T, Dh)."""
    rows, heads, length, head_dim = q.shape
    q = q.view(rows // group, group, heads, length, head_dim).transpose(1, 2)  # (M, H, G, T, Dh)
    return q.reshape(rows // group, heads, group * length, head_dim)


def _ungroup_queries(out: Tensor, group: int, length: int) -> Tensor:
    """Undo `_group_queries` and merge heads. Shapes: (M, H, G * T, Dh) -> (M * G, T, H * Dh)."""
    rows, heads, _, head_dim = out.shape
    out = out.view(rows, heads, group, length, head_dim).permute(0, 2, 3, 1, 4)  # (M, G, T, H, Dh)
    return out.reshape(rows * group, length, heads * head_dim)


class CrossAttention(nn.Module):
    """Decoder-to-encoder attention; the memory's fused K/V projection is computed once per sentence."""

    def __init__(
        self, d_model: int, n_heads: int, *, dropout: float = 0.0, attention_backend: str = "sdpa"
    ) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.dropout = dropout
        self.attention_backend = attention_backend
        self.q = Linear(d_model, d_model)
        self.kv = Linear(d_model, 2 * d_model)
        self.out = Linear(d_model, d_model)
        for linear, parts in ((self.q, 1), (self.kv, 2), (self.out, 1)):
            _init_fused(linear, parts)

    def project_memory(self, memory: Tensor, packing: Packing | None = None) -> tuple[Tensor, Tensor]:
        """Shapes: memory (B, S, D) -> k, v: (B, H, S, Dh); with `packing`, zeros at padding."""
        if packing is None:
            kv = self.kv(memory)  # (B, S, 2D)
        else:
            kv = packing.unpack(self.kv(packing.pack(memory)))  # only the real positions projected
        k, v = split_heads(kv, 2 * self.n_heads).chunk(2, dim=1)
        return k, v

    def forward(self, x: Tensor, memory_kv: tuple[Tensor, Tensor], context: AttentionContext) -> Tensor:
        """Shapes: x (B, T, D), memory_kv 2 x (M, H, S, Dh) -> (B, T, D).

        M = B, or B = M * G with the G consecutive rows of x sharing one memory row (the beams of one
        sentence). Those G rows attend as one row of G * T queries, so each memory is read once per
        step rather than G times; context.keep is then (M, S) and the bias (H, T, S).
        """
        batch, length, _ = x.shape
        k, v = memory_kv
        group = batch // k.shape[0]
        q = split_heads(self.q(x), self.n_heads)  # (B, H, T, Dh)
        bias = context.dense_bias()
        if group > 1:
            q = _group_queries(q, group)  # (M, H, G * T, Dh)
            bias = None if bias is None else bias.repeat(1, group, 1)  # (H, G * T, S)
        out = attend(
            q,
            k,
            v,
            keep=context.keep,
            bias=bias,
            dropout_p=self.dropout if self.training else 0.0,
            attention_backend=self.attention_backend,
        )
        if group > 1:
            return self.out(_ungroup_queries(out, group, length))
        return self.out(merge_heads(out))

    def probabilities(self, x: Tensor, memory_kv: tuple[Tensor, Tensor], context: AttentionContext) -> Tensor:
        """Attention weights for pictures and alignments. Shapes: -> (B, H, T, S)."""
        q = split_heads(self.q(x), self.n_heads)
        mask = build_keep(
            context.keep,
            causal=False,
            window=None,
            tq=q.shape[-2],
            tk=memory_kv[0].shape[-2],
            device=q.device,
        )
        return attention_probabilities(q, memory_kv[0], mask=mask, bias=context.dense_bias())

    def head_probabilities(
        self, x: Tensor, memory_kv: tuple[Tensor, Tensor], context: AttentionContext, head: int
    ) -> Tensor:
        """Head `head`'s attention weights, differentiable (what guided alignment trains): only that
        head's slice of the query projection is computed. Shapes: x (B, T, D) -> (B, T, S)."""
        head, head_dim = head % self.n_heads, x.shape[-1] // self.n_heads
        rows = slice(head * head_dim, (head + 1) * head_dim)
        bias = None if self.q.bias is None else self.q.bias[rows]
        q = F.linear(x, self.q.weight[rows], bias).unsqueeze(1)  # (B, 1, T, Dh)
        k = memory_kv[0][:, head : head + 1]  # (B, 1, S, Dh)
        mask = build_keep(context.keep, causal=False, window=None, tq=q.shape[-2], tk=k.shape[-2],
                          device=q.device)  # fmt: skip
        dense = context.dense_bias()  # (H, T, S) or None
        bias = None if dense is None else dense[head : head + 1]  # (1, T, S)
        return attention_probabilities(q, k, mask=mask, bias=bias)[:, 0]  # (B, T, S)

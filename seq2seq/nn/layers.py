"""Transformer layers: feed-forward, encoder and decoder layers, and cross-attention memory pooling."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.nn.attention import AttentionContext, CrossAttention, SelfAttention
from seq2seq.nn.dropout import Dropout
from seq2seq.nn.kv_cache import KVCache
from seq2seq.nn.linear import Linear
from seq2seq.nn.packing import Packing

ACTIVATIONS = ("relu", "gelu", "swiglu", "silu")
NORMS = ("pre", "post")
DOWNSAMPLE_MODES = ("avg", "conv")


class FeedForward(nn.Module):
    """Position-wise MLP: relu / gelu / silu, or SwiGLU (Shazeer, 2020) with one fused gate+value projection.

    silu (x * sigmoid(x), no gate) is the activation Marian calls "swish" (Hugging Face MarianMT).
    """

    def __init__(self, d_model: int, ffn_dim: int, *, activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        self.activation = activation
        self.up = Linear(d_model, 2 * ffn_dim if activation == "swiglu" else ffn_dim)
        self.down = Linear(ffn_dim, d_model)
        self.dropout = Dropout(dropout)
        for linear in (self.up, self.down):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, x: Tensor) -> Tensor:
        """Shapes: (B, T, D) -> (B, T, D)."""
        hidden = self.up(x)  # (B, T, F) or (B, T, 2F)
        if self.activation == "swiglu":
            gate, value = hidden.chunk(2, dim=-1)
            hidden = F.silu(gate) * value
        elif self.activation == "gelu":
            hidden = F.gelu(hidden)
        elif self.activation == "silu":
            hidden = F.silu(hidden)
        else:
            hidden = F.relu(hidden, inplace=True)  # a fresh buffer; relu backward needs only its result
        return self.down(self.dropout(hidden))


class Residual(nn.Module):
    """x + dropout(f(norm(x))) for pre-norm, norm(x + dropout(f(x))) for post-norm."""

    def __init__(self, d_model: int, *, norm: str, dropout: float) -> None:
        super().__init__()
        self.pre_norm = norm == "pre"
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)

    def sublayer_input(self, x: Tensor) -> Tensor:
        """What the sublayer sees: the normalised stream (pre-norm) or the stream itself (post-norm)."""
        return self.norm(x) if self.pre_norm else x

    def forward(self, x: Tensor, sublayer_output_of: Callable[[Tensor], Tensor]) -> Tensor:
        if self.pre_norm:
            return x + self.dropout(sublayer_output_of(self.norm(x)))
        return self.norm(x + self.dropout(sublayer_output_of(x)))


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside its residual block.

    The parts arrive built (seq2seq.model.builders wires them), so this class only says how they connect.
    """

    def __init__(
        self, self_attn: SelfAttention, ffn: FeedForward, *, attn_block: Residual, ffn_block: Residual
    ) -> None:
        super().__init__()
        self.self_attn, self.ffn = self_attn, ffn
        self.attn_block, self.ffn_block = attn_block, ffn_block

    def forward(self, x: Tensor, context: AttentionContext, cache: KVCache | None = None) -> Tensor:
        """Shapes: x (B, S, D) -> (B, S, D). A decoder-only stack is made of these layers, with a
        causal context and, while decoding, a cache (x then holds only the new tokens)."""
        x = self.attn_block(x, lambda h: self.self_attn(h, context, cache))
        return self.ffn_block(x, self.ffn)


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder memory, then the feed-forward network,
    each inside its residual block. Built from ready parts, like EncoderLayer."""

    def __init__(
        self,
        self_attn: SelfAttention,
        cross_attn: CrossAttention,
        ffn: FeedForward,
        *,
        self_block: Residual,
        cross_block: Residual,
        ffn_block: Residual,
    ) -> None:
        super().__init__()
        self.self_attn, self.cross_attn, self.ffn = self_attn, cross_attn, ffn
        self.self_block, self.cross_block, self.ffn_block = self_block, cross_block, ffn_block

    def forward(
        self,
        x: Tensor,
        memory_kv: tuple[Tensor, Tensor],
        self_context: AttentionContext,
        cross_context: AttentionContext,
        cache: KVCache | None = None,
    ) -> Tensor:
        """Shapes: x (B, T, D), memory_kv 2 x (B, H, S', Dh) -> (B, T, D)."""
        x = self.self_block(x, lambda h: self.self_attn(h, self_context, cache))
        x = self.cross_block(x, lambda h: self.cross_attn(h, memory_kv, cross_context))
        return self.ffn_block(x, self.ffn)

    def project_memory(self, memory: Tensor, packing: Packing | None = None) -> tuple[Tensor, Tensor]:
        """This layer's cross-attention keys and values of the memory, computed once per source: a method
        of the layer, so that a sharded layer (trainer.strategy=fsdp) gathers its weights for it.
        Shapes: memory (B, S', D) -> k, v: (B, H, S', Dh)."""
        return self.cross_attn.project_memory(memory, packing)

    def cross_attention_probabilities(
        self,
        x: Tensor,
        memory_kv: tuple[Tensor, Tensor],
        self_context: AttentionContext,
        cross_context: AttentionContext,
    ) -> Tensor:
        """This layer's cross-attention weights for input x. Shapes: -> (B, H, T, S')."""
        x = self.self_block(x, lambda h: self.self_attn(h, self_context))
        return self.cross_attn.probabilities(self.cross_block.sublayer_input(x), memory_kv, cross_context)

    def forward_attending(
        self,
        x: Tensor,
        memory_kv: tuple[Tensor, Tensor],
        self_context: AttentionContext,
        cross_context: AttentionContext,
        head: int,
    ) -> tuple[Tensor, Tensor]:
        """`forward`, plus cross-attention head `head`'s weights on the way, with their gradient (guided
        alignment). Shapes: x (B, T, D) -> (B, T, D), (B, T, S')."""
        x = self.self_block(x, lambda h: self.self_attn(h, self_context))
        weights = self.cross_attn.head_probabilities(
            self.cross_block.sublayer_input(x), memory_kv, cross_context, head
        )
        x = self.cross_block(x, lambda h: self.cross_attn(h, memory_kv, cross_context))
        return self.ffn_block(x, self.ffn), weights


class MemoryDownsampler(nn.Module):
    """Pool the encoder output by `stride` before cross-attention (shorter memory, cheaper decoding).

    "avg" averages the real (non-pad) positions of each group; "conv" is a learned strided
    convolution over pad-zeroed inputs. A pooled position is kept if any of its inputs is kept.
    """

    def __init__(self, d_model: int, stride: int, *, mode: str = "avg") -> None:
        super().__init__()
        self.stride = stride
        self.mode = mode
        self.conv = nn.Conv1d(d_model, d_model, kernel_size=stride, stride=stride) if mode == "conv" else None

    def forward(self, memory: Tensor, keep: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Shapes: memory (B, S, D), keep (B, S) -> pooled (B, S', D), keep (B, S'), positions (S',).

        S' = ceil(S / stride); positions are the centres of the pooled groups (float).
        """
        stride = self.stride
        batch, length, dim = memory.shape
        pooled_length = math.ceil(length / stride)
        positions = torch.arange(pooled_length, device=memory.device) * stride + (stride - 1) / 2
        if stride == 1:
            return memory, keep, positions
        tail = pooled_length * stride - length
        keep_f = F.pad(keep, (0, tail), value=False).to(memory.dtype)  # (B, S'*r)
        masked = F.pad(memory, (0, 0, 0, tail)) * keep_f[..., None]  # (B, S'*r, D), pads zeroed
        pooled_keep = keep_f.view(batch, pooled_length, stride).amax(dim=-1) > 0  # (B, S')
        if self.conv is not None:
            pooled = self.conv(masked.transpose(1, 2)).transpose(1, 2)  # (B, S', D)
        else:
            counts = (
                keep_f.view(batch, pooled_length, stride).sum(-1, keepdim=True).clamp(min=1)
            )  # (B, S', 1)
            pooled = masked.view(batch, pooled_length, stride, dim).sum(2) / counts  # (B, S', D)
        return pooled, pooled_keep, positions

"""Position information: absolute (added to embeddings), rotary (rotates q and k), ALiBi (additive bias).

Positions are explicit LongTensors of shape (T,), shared by the batch: sequences are right-padded,
so token t sits at position t in every row. During cached decoding the caller passes the step offset,
which keeps incremental and full computation identical. Absolute positions may also be (B, T), one
row per sequence: a decoder-only model left-pads its sources, so a row's first token sits at a
per-row column (RoPE and ALiBi depend only on distances and keep using columns).
An absolute scheme may count from an offset (the builders' `position_offset`): column t is then
position t + offset, in every path (full forward, cached steps); RoPE and ALiBi, which see only
distances, have none.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

SINUSOID_LAYOUTS = ("standard", "fairseq")


def sinusoid_table(positions: Tensor, dim: int, layout: str = "standard") -> Tensor:
    """The "Attention Is All You Need" encoding, computed on the fly for any position.

    Frequency i of the D/2 is 10000^(-i / (D/2)) ("standard", tensor2tensor's and Marian's) or
    10000^(-i / (D/2 - 1)) ("fairseq": fairseq's, M2M100's and NLLB's, whose last frequency is 1/10000).
    Either way the first half holds the sines and the second the cosines; an odd D gets a zero column.

    Shapes:
        positions: (T,) or (B, T) -> (T, dim) or (B, T, dim)
    """
    half = dim // 2
    if layout not in SINUSOID_LAYOUTS:
        raise ValueError(f"sinusoid layout {layout!r} is not one of {', '.join(SINUSOID_LAYOUTS)}")
    if layout == "fairseq" and half < 2:
        raise ValueError(f"the fairseq sinusoid layout needs a dimension of 4 or more, not {dim}")
    steps = half - 1 if layout == "fairseq" else half
    inv_freq = torch.exp(
        torch.arange(half, device=positions.device, dtype=torch.float32) * (-math.log(10000.0) / steps)
    )
    angles = positions.to(torch.float32)[..., None] * inv_freq  # (..., T, dim/2)
    table = torch.cat([angles.sin(), angles.cos()], dim=-1)  # (..., T, 2*(dim/2))
    if dim % 2:
        table = nn.functional.pad(table, (0, 1))
    return table


class SinusoidalPositions(nn.Module):
    """Fixed sinusoidal absolute positions; no length limit and no parameters.

    `offset`: the position of a sequence's first token (column t sits at t + offset); M2M100 and NLLB
    count from 2, their padding id + 1.
    """

    def __init__(self, dim: int, *, layout: str = "standard", offset: int = 0) -> None:
        super().__init__()
        self.dim = dim
        self.layout = layout
        self.offset = offset

    def forward(self, positions: Tensor) -> Tensor:
        """Shapes: positions (T,) or (B, T) columns -> (T, D) or (B, T, D)."""
        if self.offset:
            positions = positions + self.offset
        return sinusoid_table(positions, self.dim, self.layout)


class LearnedPositions(nn.Module):
    """Trained absolute position embeddings for columns 0 .. max_positions-1.

    With an `offset`, column t reads row t + offset of a table of max_positions + offset rows (the
    first `offset` rows are never read: the layout of Hugging Face's learned position tables with an
    offset, such as MBart's); `max_positions` still counts tokens.
    """

    def __init__(self, dim: int, max_positions: int, *, offset: int = 0) -> None:
        super().__init__()
        self.max_positions = max_positions
        self.offset = offset
        self.table = nn.Embedding(max_positions + offset, dim)
        nn.init.normal_(self.table.weight, mean=0.0, std=dim**-0.5)

    def forward(self, positions: Tensor) -> Tensor:
        """Shapes: positions (T,) or (B, T) columns -> (T, D) or (B, T, D)."""
        if positions.numel() and int(positions.max()) >= self.max_positions:
            raise ValueError(
                f"position {int(positions.max())} exceeds max_positions={self.max_positions}; "
                "shorten the input or build the model with a larger max_positions"
            )
        return self.table(positions + self.offset if self.offset else positions)


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al., 2021) with the rotate-half layout: pairs (i, i + Dh/2) share one frequency."""

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rope needs an even head dimension, got {head_dim}; change d_model or n_heads")
        inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Cos and sin tables for `positions`.

        Shapes:
            positions: (T,) -> cos, sin: (T, Dh)
        """
        angles = positions.to(torch.float32)[:, None] * self.inv_freq[None, :]  # (T, Dh/2)
        angles = torch.cat([angles, angles], dim=-1)  # (T, Dh)
        return angles.cos(), angles.sin()


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate q or k by their positions' angles.

    Shapes:
        x: (B, H, T, Dh); cos, sin: (T, Dh) -> (B, H, T, Dh)
    """
    half = x.shape[-1] // 2
    rotated_half = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (B, H, T, Dh)
    return (x * cos + rotated_half * sin).to(x.dtype)


def alibi_slopes(n_heads: int) -> Tensor:
    """Per-head ALiBi slopes from Press et al. (2022).

    For a power of two n the slopes are the geometric sequence 2^(-8/n), 2^(-16/n), ...;
    otherwise the n' = 2^floor(log2 n) slopes are followed by every other slope of 2n'.
    """

    def power_of_two_slopes(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two_slopes(closest)
    if closest != n_heads:
        slopes += power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(slopes: Tensor, q_positions: Tensor, k_positions: Tensor) -> Tensor:
    """Additive bias -slope * |i - j|: linear in distance, symmetric for bidirectional attention.

    Under a causal mask only j <= i is visible, where this equals the paper's -slope * (i - j).

    Shapes:
        slopes: (H,); q_positions: (..., Tq); k_positions: (..., Tk) -> (H, ..., Tq, Tk)
    """
    distance = (
        (q_positions[..., :, None] - k_positions[..., None, :]).abs().to(torch.float32)
    )  # (..., Tq, Tk)
    return -slopes.view(-1, *([1] * distance.dim())) * distance

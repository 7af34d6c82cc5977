"""Dropout whose keep-mask is cheaper to draw on CPU than PyTorch's.

On CPU, `F.dropout` draws one Bernoulli sample per element from the default generator; drawing
64-bit random integers and reading each as two 32-bit uniforms needs half as many generator calls and
no float conversion, which was faster forward and backward at each of the `small` model's 23 dropout
sites (figures: benchmarks/results.md). The distribution is the same up to probabilities being
multiples of 2^-32 (the float uniform behind `F.dropout` has 2^-24 steps), the mask is saved as bool
(as `F.dropout` does), and the draws come from the default generator, so `torch.manual_seed`,
checkpointed RNG state and `torch.utils.checkpoint`'s RNG replay all apply. Other devices use
`F.dropout` (fused kernels).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_TWO_POW_32 = 1 << 32


class Dropout(nn.Module):
    """Drop each element with probability `p` in training and scale the rest by 1 / (1 - p)."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability p={p} is outside [0, 1]")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        """Shapes: any -> same."""
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or self.p == 1.0:
            return F.dropout(x, self.p, training=True)
        return _CpuDropout.apply(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def keep_mask(shape: torch.Size, p: float) -> Tensor:
    """Bool tensor of `shape`, each element True with probability 1 - p (p rounded to 2^-32 steps)."""
    numel = shape.numel()
    words = torch.randint(-(1 << 63), (1 << 63) - 1, ((numel + 1) // 2,))  # (ceil(n/2),) int64
    uniform = words.view(torch.int32)[:numel].view(shape)  # each uniform over [-2^31, 2^31)
    return uniform >= round(p * _TWO_POW_32) - (1 << 31)


class _CpuDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:  # signature fixed by autograd.Function
        keep = keep_mask(x.shape, p)
        scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return x.mul(keep).mul_(scale)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # signature fixed by autograd.Function
        (keep,) = ctx.saved_tensors
        return grad_output.mul(keep).mul_(ctx.scale), None

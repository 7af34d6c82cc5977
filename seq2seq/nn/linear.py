"""Linear layers whose float32 CPU inference runs on oneDNN rather than the BLAS sgemm where that is faster.

F.linear computes float32 products on CPU with the BLAS PyTorch was built with (MKL for the x86
wheels). PyTorch also ships oneDNN, which it already uses for bfloat16. On an AVX-512 CPU oneDNN's
float32 kernel was faster at every shape of our decoding step (output projection, FFN, QKV); on an
AVX2-only CPU MKL was, by 10-20% in greedy decoding (the figures: benchmarks/results.md). So oneDNN
is chosen on CPUs whose PyTorch kernels run AVX-512 (`torch.backends.cpu.get_cpu_capability()`), and
MKL elsewhere.

oneDNN is used only where nothing can need a gradient (no_grad / inference_mode), for float32
CPU tensors outside autocast, and only when this PyTorch build has the kernel; everything else,
training included, goes through F.linear unchanged. The two differ only in float32 rounding.

oneDNN builds a primitive (JIT-compiled code) per input shape and keeps it in two caches, ideep's
(`LRU_CACHE_CAPACITY`) and oneDNN's own (`ONEDNN_PRIMITIVE_CACHE_CAPACITY`), 1024 entries each by default.
Decoding meets a new row count at almost every batch, so a long-running server grew without visible
end, while 64 entries each kept a translator fed batches of random sizes bounded at the same speed
(the figures: benchmarks/results.md).
`bound_onednn_caches` sets 64 unless the variables are set already; they are read when the caches are
first used, so it runs before the first oneDNN primitive (engines and training call it at start).
"""

from __future__ import annotations

import functools
import logging
import os

import torch
import torch.nn.functional as F
from torch import Tensor, nn

log = logging.getLogger(__name__)
ONEDNN_CACHE_VARIABLES = ("LRU_CACHE_CAPACITY", "ONEDNN_PRIMITIVE_CACHE_CAPACITY")
ONEDNN_CACHE_CAPACITY = 64  # primitives per cache; see the module docstring


def bound_onednn_caches(capacity: int = ONEDNN_CACHE_CAPACITY) -> None:
    """Cap oneDNN's per-shape primitive caches for this process (a value set by the user wins)."""
    for name in ONEDNN_CACHE_VARIABLES:
        os.environ.setdefault(name, str(capacity))


@functools.cache
def onednn_linear_available() -> bool:
    """Whether this PyTorch build can run a float32 linear through oneDNN (checked once)."""
    bound_onednn_caches()  # before the check below builds the process's first primitive
    try:
        kernel = torch.ops.mkldnn._linear_pointwise
        if not torch.backends.mkldnn.is_available():
            return False
        x, weight = torch.ones(2, 3), torch.ones(4, 3)
        return torch.equal(kernel(x, weight, None, "none", [], ""), torch.full((2, 4), 3.0))
    except Exception as error:  # an old or unusual build: F.linear everywhere
        log.debug("oneDNN linear unavailable (%s); using F.linear", error)
        return False


@functools.cache
def onednn_linear_preferred() -> bool:
    """Whether float32 inference products go to oneDNN here: it has the kernel and the CPU runs AVX-512."""
    return onednn_linear_available() and torch.backends.cpu.get_cpu_capability() == "AVX512"


def _use_onednn(x: Tensor, weight: Tensor) -> bool:
    return (
        not torch.compiler.is_compiling()  # a compiled graph (seq2seq.decode.compiled) picks its own kernels
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
        and not torch.is_grad_enabled()
        and not torch.is_autocast_enabled("cpu")
        and onednn_linear_preferred()
    )


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b, like F.linear. Shapes: x (..., in), weight (out, in), bias (out,) -> (..., out)."""
    if _use_onednn(x, weight):
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """nn.Linear (same parameters, initialisation and state-dict keys) computed by `linear`."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


__all__ = ["Linear", "bound_onednn_caches", "linear", "onednn_linear_available", "onednn_linear_preferred"]

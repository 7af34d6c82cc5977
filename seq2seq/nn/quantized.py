"""int8 inference: every linear layer of a trained model on PyTorch's dynamic int8 kernels.

`quantize_int8(model)` swaps each `nn.Linear` (the Transformer's projections and FFNs) and the output
projection (tied to the target embedding or not, with its logit bias if it has one) for an
`Int8Linear`. Its weight is stored as int8 with one scale per output row (symmetric, per channel),
packed once for the kernel; at each call the activations are quantized per tensor from their own range
("dynamic"), multiplied in int8 and returned in float32 with the (float) bias added. Embedding
lookups, layer norms, softmax and attention stay float32.

The kernels are PyTorch's own (`torch.ops.quantized.linear_dynamic`: fbgemm on x86, with AVX2 or
AVX512; qnnpack on ARM), the ones `torch.ao.quantization.quantize_dynamic` uses. torchao's eager int8
(`Int8DynamicActivationInt8WeightConfig`) reaches CPUs through `torch._int_mm`, which ran about 20 times
slower than float32 at our decoding shapes on an AVX2 machine (the figures: benchmarks/results.md), so it is
not used. `reduce_range` keeps activations to 7 bits on x86, as `quantize_dynamic` does there: the AVX2
int8 multiply-add saturates 16-bit sums of two 8-bit products otherwise.

This is CPU inference only: nothing here has a gradient, and the kernels have no CUDA version.
"""

from __future__ import annotations

import functools
import logging
import warnings

import torch
from torch import Tensor, nn

from seq2seq.nn.embeddings import OutputProjection

log = logging.getLogger(__name__)
QUANTIZATIONS = ("none", "int8")


@functools.cache
def int8_available() -> bool:
    """Whether this PyTorch build has a dynamic int8 linear kernel (checked once, on a 2x2 product)."""
    try:
        layer = Int8Linear(torch.eye(2), None)
        return torch.allclose(layer(torch.ones(1, 2)), torch.ones(1, 2), atol=0.05)
    except (RuntimeError, AttributeError) as error:  # no engine, or a build without quantized ops
        log.debug("dynamic int8 kernels unavailable (%s)", error)
        return False


def _reduce_range() -> bool:
    return torch.backends.quantized.engine in ("fbgemm", "x86")


class Int8Linear(nn.Module):
    """y = x W^T + b with W in int8 (a scale per output row) and x quantized per call.

    Shapes: x (..., in) -> (..., out). Built from a float weight (out, in) and bias (out,) or None; it
    keeps no float copy (`rows` takes a vocabulary shortlist's rows from the int8 weights themselves).
    """

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        weight = weight.detach().float().cpu()
        scales = (weight.abs().amax(dim=1) / 127.0).clamp_min(1e-12).double()  # (out,)
        zero_points = torch.zeros(weight.shape[0], dtype=torch.long)
        with warnings.catch_warnings():  # deprecated as a user-facing tensor type; still the kernel's input
            warnings.simplefilter("ignore", UserWarning)
            qweight = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
        self._pack(qweight, None if bias is None else bias.detach().float().cpu())

    def _pack(self, qweight: Tensor, bias: Tensor | None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self._packed = torch.ops.quantized.linear_prepack(qweight, bias)
        self.in_features, self.out_features = qweight.shape[1], qweight.shape[0]
        self.reduce_range = _reduce_range()

    def rows(self, index: Tensor) -> Int8Linear:
        """This layer for the output rows `index` only, from its own int8 weights and scales, so its
        outputs equal those columns of this layer's (a vocabulary shortlist's candidates).
        Shapes: index (C,) -> a layer (..., in) -> (..., C).

        The int8 values, scales and zero points are unpacked once, at the first call, and kept for the
        next ones (a shortlist asks once per batch): one more copy of the int8 weight, made only for the
        output projection of a model translated with a shortlist."""
        if getattr(self, "_unpacked", None) is None:
            qweight, bias = torch.ops.quantized.linear_unpack(self._packed)
            self._unpacked = (qweight.int_repr(), qweight.q_per_channel_scales(),
                              qweight.q_per_channel_zero_points(), bias)  # fmt: skip
        values, scales, zero_points, bias = self._unpacked
        index = index.cpu()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            chosen = torch._make_per_channel_quantized_tensor(
                values.index_select(0, index),  # (C, in)
                scales.index_select(0, index),
                zero_points.index_select(0, index),
                0,
            )
        layer = Int8Linear.__new__(Int8Linear)
        nn.Module.__init__(layer)
        layer._pack(chosen, None if bias is None else bias.index_select(0, index))
        return layer

    def forward(self, x: Tensor) -> Tensor:
        return torch.ops.quantized.linear_dynamic(x.float(), self._packed, self.reduce_range)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_int8(model: nn.Module) -> nn.Module:
    """`model` (on CPU, for inference) with every linear layer and output projection replaced by an
    Int8Linear, in place; the float weights they held are released unless an embedding shares them (a
    tied output projection's). Returns the model."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                setattr(parent, name, Int8Linear(child.weight, child.bias))
            elif isinstance(child, OutputProjection):
                setattr(parent, name, Int8Linear(child.weight, child.bias))  # bias: None or (V,), float
            else:
                continue
            replaced += 1
    log.info("int8: %d linear layers quantized (weights per output channel, activations per call)", replaced)
    return model


__all__ = ["QUANTIZATIONS", "Int8Linear", "int8_available", "quantize_int8"]

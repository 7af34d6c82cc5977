"""AdamW with decay-aware parameter groups, and gradient clipping.

Weight decay applies only to weight matrices (linear maps, convolutions). Biases, normalisation gains and
embedding tables (including an output projection tied to an embedding) are exempt: decay on a gain
pulls it towards zero rather than towards the identity, and AdamW's decoupled decay shrinks every
embedding row on every step while rare tokens receive gradient only now and then.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Sequence

import torch
from torch import nn

from seq2seq.errors import UserError
from seq2seq.nn.embeddings import TokenEmbedding

log = logging.getLogger(__name__)

# Embedding tables are matrices, so they need naming; norms and biases are caught by ndim < 2.
# An untied OutputProjection is a linear map and is decayed.
_EMBEDDING_MODULES: tuple[type[nn.Module], ...] = (nn.Embedding, nn.EmbeddingBag, TokenEmbedding)


def no_decay_parameter_ids(model: nn.Module) -> set[int]:
    """ids of the parameters exempt from weight decay: every parameter with fewer than 2 dimensions
    (biases, norm gains, scalars) and the tables of ``TokenEmbedding``, ``nn.Embedding`` and
    ``nn.EmbeddingBag`` modules (and their subclasses).

    Decided by owning module, not by name, so a tied output projection is exempt however it is reached.
    """
    exempt = {id(p) for p in model.parameters() if p.ndim < 2}
    for module in model.modules():
        if isinstance(module, _EMBEDDING_MODULES):
            exempt.update(id(p) for p in module.parameters(recurse=False))
    return exempt


def _check_adamw_args(lr: float, betas: Sequence[float], eps: float, weight_decay: float) -> None:
    if not lr >= 0:
        raise UserError(f"optimizer lr={lr} must be non-negative; set e.g. lr: 5e-4")
    if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
        raise UserError(f"optimizer betas={list(betas)} must be two numbers in [0, 1); use e.g. [0.9, 0.98]")
    if not eps > 0:
        raise UserError(f"optimizer eps={eps} must be positive; use e.g. 1e-9")
    if not weight_decay >= 0:
        raise UserError(f"optimizer weight_decay={weight_decay} must be non-negative; use 0 to disable it")


def build_adamw(
    model: nn.Module,
    *,
    lr: float,
    betas: Sequence[float] = (0.9, 0.98),
    eps: float = 1e-9,
    weight_decay: float = 0.0,
    no_decay_norm_and_bias: bool = True,
) -> torch.optim.AdamW:
    """AdamW over the trainable parameters of ``model``, in groups named "decay" and "no_decay".

    ``lr`` is the rate used until a schedule overwrites it (see ``schedules.ScheduledLR``).
    ``betas`` may be any two-element sequence (Hydra passes a ListConfig). With
    ``no_decay_norm_and_bias=False`` every parameter is decayed. Torch's fused kernel runs the update
    where it exists (the parameters on a CPU or a CUDA device, as they are when the trainer builds it).
    """
    betas = tuple(float(b) for b in betas)
    _check_adamw_args(lr, betas, eps, weight_decay)
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise UserError("the model has no trainable parameters; unfreeze some before building the optimizer")
    exempt = no_decay_parameter_ids(model) if no_decay_norm_and_bias else set()
    decay = [p for p in trainable if id(p) not in exempt]
    no_decay = [p for p in trainable if id(p) in exempt]
    groups = [
        {"name": "decay", "params": decay, "weight_decay": weight_decay},
        {"name": "no_decay", "params": no_decay, "weight_decay": 0.0},
    ]
    groups = [g for g in groups if g["params"]]
    for g in groups:
        log.info(
            "optimizer group %s: %d tensors, %d values",
            g["name"],
            len(g["params"]),
            sum(p.numel() for p in g["params"]),
        )
    fused = fused_kernel_fits(trainable) or None  # None: torch's own choice (its loop)
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, fused=fused)


# Devices with torch's fused AdamW kernel: one kernel for all tensors instead of a Python loop over them,
# the same update up to float rounding (benchmarks/train_overheads.py times both; benchmarks/results.md).
FUSED_DEVICES = ("cpu", "cuda")


def fused_kernel_fits(parameters: Sequence[torch.Tensor]) -> bool:
    """True when every parameter is a floating-point tensor on one device type with the fused kernel."""
    kinds = {p.device.type for p in parameters}
    return len(kinds) == 1 and kinds <= set(FUSED_DEVICES) and all(p.is_floating_point() for p in parameters)


def _with_grads(parameters: Iterable[torch.Tensor] | torch.Tensor) -> list[torch.Tensor]:
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def clip_gradients(parameters: Iterable[torch.Tensor] | torch.Tensor, max_norm: float | None) -> float:
    """Scale gradients so their global L2 norm is at most ``max_norm``; return the norm before clipping.

    ``max_norm`` None or <= 0 only measures. A non-finite norm is returned, not raised: the caller
    skips that update (the gradients are then unusable, whether or not they were scaled).
    """
    params = _with_grads(parameters)
    if not params:
        return 0.0
    if _sharded(params[0].grad):
        return _clip_sharded(params, max_norm)
    if max_norm is not None and max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm=max_norm, error_if_nonfinite=False))
    device = params[0].grad.device
    norms = [torch.linalg.vector_norm(p.grad.detach(), dtype=torch.float32).to(device) for p in params]
    return float(torch.linalg.vector_norm(torch.stack(norms)))


def _sharded(tensor: torch.Tensor) -> bool:
    """Whether `tensor` is a DTensor (an FSDP run's gradient); checked without importing DTensor, which
    a run that shards nothing never imports (seq2seq.train.sharding)."""
    module = sys.modules.get("torch.distributed.tensor")
    return module is not None and isinstance(tensor, module.DTensor)


def _clip_sharded(params: list[torch.Tensor], max_norm: float | None) -> float:
    """clip_gradients for FSDP's sharded gradients (DTensors): the norm over every rank's shards, the
    same on every rank, and every shard scaled by the same factor."""
    total = torch.nn.utils.get_total_norm([p.grad for p in params], error_if_nonfinite=False)
    total = total.full_tensor() if _sharded(total) else total  # the partial norms reduced
    if max_norm is not None and max_norm > 0:
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, total)
    return float(total)

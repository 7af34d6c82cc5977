"""Data parallelism on torch.distributed (gloo on CPU, NCCL on GPU), launched by torchrun.

Without torchrun every helper here degrades to the single-process answer, so the loop has no
special cases: rank 0 is "main", world size 1, and reductions return their input.
"""

from __future__ import annotations

import logging
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

log = logging.getLogger(__name__)


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def initialize(device: torch.device) -> None:
    """Join the process group torchrun describes in the environment (no-op for one process).

    On GPUs each rank first makes its own GPU current (`device`, from LOCAL_RANK): NCCL collectives,
    object broadcasts included, run on the current device, which would otherwise be GPU 0 for every rank.
    """
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not launched_by_torchrun() or dist.is_initialized():
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend=backend)
    log.info("rank %d of %d joined the %s process group", rank(), world_size(), backend)


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def barrier() -> None:
    """Wait until every rank gets here (no-op for one process)."""
    if dist.is_initialized():
        dist.barrier()


def all_reduce_sum(value: float, device: torch.device) -> float:
    """Sum a Python number over all ranks."""
    if not dist.is_initialized():
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor)
    return float(tensor.item())


def agree(flags: list[int], device: torch.device) -> list[int]:
    """Element-wise maximum over all ranks of small non-negative integers (one all-reduce).

    Any rank's request (a signal it received, its clock running out, a validation it thinks is due)
    then holds for every rank, so all of them take the same branch and meet in the same collectives.
    """
    if not dist.is_initialized():
        return list(flags)
    tensor = torch.tensor(flags, dtype=torch.int64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return [int(value) for value in tensor.tolist()]


def gather_objects(value: object) -> list[object] | None:
    """Every rank's `value`, in rank order, on rank 0 (None elsewhere); [value] for one process."""
    if not dist.is_initialized():
        return [value]
    gathered: list[object] | None = [None] * world_size() if is_main() else None
    dist.gather_object(value, gathered, dst=0)
    return gathered


def unwrapped(model: nn.Module) -> nn.Module:
    """The model itself: DistributedDataParallel keeps it in `.module`."""
    return model.module if isinstance(model, DistributedDataParallel) else model

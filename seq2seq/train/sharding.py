"""trainer.strategy: how the ranks of a torchrun job hold the model.

ddp (the default): every rank holds the whole model, its gradients and its optimizer state, and
DistributedDataParallel averages the gradients (seq2seq.cli.train wraps the model so).

fsdp: FSDP2 (`torch.distributed.fsdp.fully_shard`) shards the parameters, gradients and optimizer state
over the ranks. Each encoder and decoder layer is one sharding unit (its weights are gathered just before
it runs and freed after), then the root takes the rest (embeddings, output projection, final norms), so a
rank holds about 1/N of the training state plus one layer's gathered weights at a time. The device mesh
is built for the device in use, `init_device_mesh(device.type, (world,))`: gloo on CPUs, NCCL on GPUs.
With trainer.precision bf16 the parameters are gathered and computed in bf16 and the gradients reduced
in fp32 (`MixedPrecisionPolicy`), inside the same bf16 autocast the trainer runs every run in; fp32 runs
use no policy. Activation checkpointing (model.checkpoint_activations) recomputes a layer inside its
unit, which gathers its weights again for the recomputation.

Gradient reduction: torch 2.13's fully_shard reduce-scatters fp32 and bf16 gradients with ReduceOp.AVG,
leaving the division to the backend, and some versions' gloo has been reported to sum there instead
(2.13's averages). So every unit reduces with SUM and divides by the world size itself
(`set_force_sum_reduction_for_comms`): what DistributedDataParallel computes and what the loop's loss
scaling assumes (world / tokens, loop.py), whatever a backend does with AVG. tests/train/test_fsdp.py
compares 2 ranks with 1 process on the same batches, gradient norms included (a sum doubles them).

One process has nothing to shard: fsdp then warns and trains the model as it is, still writing fsdp's
checkpoint layout (seq2seq.train.sharded_checkpoint), so a run moves between 1 and N ranks.

torch.distributed.fsdp is imported only by a run that shards: a ddp run's processes import what they
did before strategies existed (with more of torch.distributed imported, two-rank ddp test processes
were seen to hang at exit now and then: a gloo process group destroyed while its worker thread waits
for the GIL, torch 2.13).
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any

import torch
from torch import nn

from seq2seq.errors import UserError
from seq2seq.nn.layers import DecoderLayer, EncoderLayer
from seq2seq.train import distributed

log = logging.getLogger(__name__)

DDP, FSDP = "ddp", "fsdp"
STRATEGIES = (DDP, FSDP)
SHARDING_UNITS = (EncoderLayer, DecoderLayer)
# A layer's methods besides forward that use its weights (a decoder layer's cross-attention keys and
# values, computed once per source; guided alignment's attending pass; attention pictures): FSDP
# gathers the weights for them as it does for forward.
FORWARD_METHODS = ("project_memory", "forward_attending", "cross_attention_probabilities")


def check_strategy(strategy: str, *, average_fraction: float | None = None) -> str:
    """trainer.strategy, checked with the settings it rules out; a one-line UserError otherwise."""
    if strategy not in STRATEGIES:
        raise UserError(f"trainer.strategy={strategy!r} is not a strategy; choose ddp (every rank holds the "
                        "model) or fsdp (the ranks shard it)")  # fmt: skip
    if strategy == FSDP and average_fraction is not None:
        raise UserError(f"trainer.average_fraction={average_fraction} keeps weight snapshots taken on one "
                        "rank, which trainer.strategy=fsdp does not hold whole; use trainer.average_last=N "
                        "instead")  # fmt: skip
    return strategy


def is_sharded(model: nn.Module) -> bool:
    """Whether FSDP2 holds `model`'s parameters as shards (fully_shard was applied to it)."""
    fsdp = sys.modules.get("torch.distributed.fsdp")  # not imported: nothing was sharded
    return fsdp is not None and isinstance(model, fsdp.FSDPModule)


def sharding_units(model: nn.Module) -> list[nn.Module]:
    """The model's encoder and decoder layers (every family builds its stacks of these), in model order."""
    return [module for module in model.modules() if isinstance(module, SHARDING_UNITS)]


def mixed_precision_policy(precision: str) -> Any:
    """bf16: a MixedPrecisionPolicy: parameters gathered and computed in bf16, gradients reduced in fp32;
    fp32: None, no policy."""
    from torch.distributed.fsdp import MixedPrecisionPolicy

    if precision == "bf16":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    return None


def device_mesh(device: torch.device) -> Any:
    """The one-dimensional DeviceMesh of every rank, on the device type this rank trains on."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(device.type, (distributed.world_size(),))


def fsdp_model(model: nn.Module, device: torch.device, precision: str) -> nn.Module:
    """`model` (on `device`) sharded over the ranks, in place; with one process, `model` as it is, with a
    warning. `precision`: the run's resolved precision (fp32 or bf16). Call it before building the
    optimizer: fully_shard replaces the parameters by sharded ones."""
    if distributed.world_size() == 1:
        log.warning("trainer.strategy=fsdp with one process: nothing to shard, so the model trains whole; "
                    "checkpoints keep fsdp's layout (resumable on any number of ranks)")  # fmt: skip
        return model
    return shard_model(model, device, precision)


def shard_model(model: nn.Module, device: torch.device, precision: str) -> nn.Module:
    """fully_shard every encoder and decoder layer, then the root, on `device`'s mesh with the policy of
    `precision`; every unit reduces gradients by SUM and divides by the world size (module docstring)."""
    from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method

    settings: dict[str, object] = {"mesh": device_mesh(device)}
    policy = mixed_precision_policy(precision)
    if policy is not None:
        settings["mp_policy"] = policy
    units = [fully_shard(layer, **settings) for layer in sharding_units(model)]
    # A decoder layer's project_memory returns its keys and values as views of one projection; nothing
    # changes them in place, which is what FSDP warns about for every view a unit returns.
    warnings.filterwarnings("ignore", message=r"FSDP2-wrapped module \(FSDPDecoderLayer\) returned a view")
    for unit in units:
        for name in FORWARD_METHODS:
            if hasattr(unit, name):
                register_fsdp_forward_method(unit, name)
    root = fully_shard(model, **settings)
    for unit in (*units, root):
        unit.set_force_sum_reduction_for_comms(True)
    log.info("trainer.strategy=fsdp: %d layers and the root sharded over %d ranks (%s, precision %s)",
             len(units), distributed.world_size(), device.type, precision)  # fmt: skip
    return root

"""Capture and restore the global random number generators, for exact resumption.

The state is plain Python values and tensors only (numpy's key array becomes a list of ints), so a
checkpoint that holds it still loads with ``torch.load(weights_only=True)``. Covered: Python's
``random``, numpy's legacy global generator (``np.random.*``), torch's CPU generator and, when CUDA
is available, every CUDA device's generator. Generators created explicitly (``torch.Generator``,
``np.random.default_rng``) belong to their owners and are not captured.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import numpy as np
import torch

from seq2seq.train import distributed

log = logging.getLogger(__name__)


def rng_state() -> dict[str, Any]:
    """A snapshot of every global generator, safe to store in a checkpoint."""
    version, keys, gauss_next = random.getstate()
    name, np_keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": {"version": version, "keys": list(keys), "gauss_next": gauss_next},
        "numpy": {
            "bit_generator": str(name),
            "keys": [int(k) for k in np_keys],
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore a snapshot from ``rng_state``; CUDA states are skipped, with a warning, without CUDA."""
    py = state["python"]
    random.setstate((py["version"], tuple(py["keys"]), py["gauss_next"]))
    npy = state["numpy"]
    np.random.set_state(
        (
            npy["bit_generator"],
            np.asarray(npy["keys"], dtype=np.uint32),
            npy["pos"],
            npy["has_gauss"],
            npy["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"].cpu())
    cuda = state.get("cuda")
    if cuda is None:
        return
    if not torch.cuda.is_available():
        log.warning("checkpoint holds CUDA generator states but CUDA is unavailable; not restoring them")
        return
    count = torch.cuda.device_count()
    if len(cuda) != count:
        log.warning(
            "checkpoint holds %d CUDA generator states for %d devices; restoring the first %d",
            len(cuda),
            count,
            min(len(cuda), count),
        )
    for device, device_state in enumerate(cuda[:count]):
        torch.cuda.set_rng_state(device_state.cpu(), device)


def restore_rng(payload: dict[str, Any]) -> None:
    """Each rank continues its own generators from a checkpoint's `rng_per_rank` (or, in files written
    before it existed, rank 0's `rng`). A run with another number of ranks restores what it can: ranks
    the file has no state for keep their fresh per-rank seeds, which one log line says."""
    saved = payload.get("rng_per_rank") or [payload["rng"]]
    rank, world = distributed.rank(), distributed.world_size()
    if rank < len(saved):
        set_rng_state(saved[rank])
    if len(saved) != world and distributed.is_main():
        log.warning(
            "the checkpoint holds random generator states for %d rank(s), this run has %d; ranks below %d "
            "continue theirs, the others keep fresh seeds (dropout then differs from an uninterrupted run)",
            len(saved), world, min(len(saved), world),
        )  # fmt: skip

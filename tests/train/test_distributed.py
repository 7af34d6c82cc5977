"""Two gloo processes, each on its own batch, produce exactly the gradient of one process on both."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from test_loop import make_trainer


def _first_two_batches(trainer):
    indices = trainer.batches.batches(0)[:2]
    return [trainer.make_batch(ix) for ix in indices]


def _gradients_after_one_update(trainer, batches) -> list[torch.Tensor]:
    """Run one update on `batches` and return the (clipped-off) gradients the optimizer saw."""
    captured: dict[str, list[torch.Tensor]] = {}
    original_step = trainer.optimizer.step

    def capture(*args, **kwargs):
        captured["grads"] = [p.grad.detach().clone() for p in trainer._unwrapped().parameters()]
        return original_step(*args, **kwargs)

    trainer.optimizer.step = capture
    trainer.options.clip_norm = None
    trainer._update(batches)
    return captured["grads"]


def _rank_main(rank: int, world_size: int, store_path: str, out_dir: str) -> None:
    os.environ.update(WORLD_SIZE=str(world_size), RANK=str(rank))
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, world_size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    trainer = make_trainer(Path(out_dir) / f"rank{rank}", max_updates=1, dropout=0.0)
    batch = _first_two_batches(trainer)[rank]
    trainer.model = torch.nn.parallel.DistributedDataParallel(trainer.model)
    grads = _gradients_after_one_update(trainer, [batch])
    if rank == 0:
        torch.save(grads, Path(out_dir) / "ddp_grads.pt")
    dist.destroy_process_group()


@pytest.mark.slow
def test_two_process_gradients_equal_single_process_on_the_union(tmp_path: Path) -> None:
    single = make_trainer(tmp_path / "single", max_updates=1, update_freq=2, dropout=0.0)
    expected = _gradients_after_one_update(single, _first_two_batches(single))
    mp.spawn(_rank_main, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2, join=True)
    got = torch.load(tmp_path / "ddp_grads.pt")
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)

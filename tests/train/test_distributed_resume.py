"""Data parallelism: every rank resumes its own random streams (bitwise-exact two-rank resume with dropout),
and each rank makes its own GPU current before the first collective."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from test_loop import make_trainer, toy_dataset

from seq2seq.data.batching import TokenBatchSampler
from seq2seq.train import distributed
from seq2seq.train.loop import Trainer


def ranked_trainer(out_dir: Path, rank: int, world: int, max_updates: int) -> Trainer:
    """make_trainer's run on this rank's share of the batches, wrapped in DDP, dropout seeded per rank."""
    trainer = make_trainer(out_dir, max_updates=max_updates, save_every=4, dropout=0.3)
    dataset = toy_dataset()
    trainer.batches = TokenBatchSampler(
        dataset.src_lengths, dataset.tgt_lengths, max_tokens=60, seed=3, rank=rank, world_size=world
    )
    trainer.model = torch.nn.parallel.DistributedDataParallel(trainer.model)
    torch.manual_seed(1000 + rank)  # as the CLI does: one dropout stream per rank
    return trainer


def _rank(rank: int, world: int, store: str, out_dir: str, max_updates: int, resume: bool) -> None:
    os.environ.update(WORLD_SIZE=str(world), RANK=str(rank))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store, world), rank=rank, world_size=world)
    trainer = ranked_trainer(Path(out_dir), rank, world, max_updates)
    if resume:
        trainer.resume_from(Path(out_dir) / "last.pt")
    trainer.fit()
    if rank == 0:
        torch.save(trainer._unwrapped().state_dict(), Path(out_dir) / f"weights_{max_updates}.pt")
    dist.destroy_process_group()


def spawn(tmp_path: Path, name: str, out_dir: Path, max_updates: int, resume: bool = False) -> None:
    args = (2, str(tmp_path / f"store_{name}"), str(out_dir), max_updates, resume)
    mp.spawn(_rank, args=args, nprocs=2, join=True)


@pytest.mark.slow
def test_two_rank_resume_with_dropout_is_bitwise_identical(tmp_path: Path) -> None:
    spawn(tmp_path, "straight", tmp_path / "straight", max_updates=10)
    spawn(tmp_path, "first", tmp_path / "resumed", max_updates=5)  # stops after the checkpoint at update 4
    saved = torch.load(tmp_path / "resumed" / "last.pt", weights_only=True)
    assert saved["step"] == 5 and len(saved["rng_per_rank"]) == 2
    assert not torch.equal(saved["rng_per_rank"][0]["torch"], saved["rng_per_rank"][1]["torch"])
    spawn(tmp_path, "second", tmp_path / "resumed", max_updates=10, resume=True)
    straight = torch.load(tmp_path / "straight" / "weights_10.pt")
    resumed = torch.load(tmp_path / "resumed" / "weights_10.pt")
    for name, value in straight.items():
        assert torch.equal(value, resumed[name]), name


def test_a_run_with_other_ranks_restores_what_it_can_and_says_so(tmp_path: Path, caplog) -> None:
    trainer = make_trainer(tmp_path, max_updates=3)
    trainer.fit()
    payload = torch.load(tmp_path / "last.pt", weights_only=True)
    assert len(payload["rng_per_rank"]) == 1  # one process: its own state
    payload["rng_per_rank"] = [payload["rng_per_rank"][0], payload["rng_per_rank"][0]]  # as if from 2 ranks
    torch.save(payload, tmp_path / "two_ranks.pt")
    again = make_trainer(tmp_path, max_updates=4)
    with caplog.at_level(logging.WARNING):
        again.resume_from(tmp_path / "two_ranks.pt")
    assert "random generator states for 2 rank(s), this run has 1" in caplog.text
    assert torch.equal(torch.get_rng_state(), payload["rng_per_rank"][0]["torch"])


def test_each_rank_sets_its_gpu_before_the_first_collective(monkeypatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: calls.append(("set_device", device)))
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend: calls.append(("init", backend)))
    from seq2seq.devices import pick_device

    for setting in ("auto", "cuda"):
        calls.clear()
        device = pick_device(setting, local_rank=distributed.local_rank())
        assert device == torch.device("cuda", 1)
        distributed.initialize(device)
        assert calls == [("set_device", torch.device("cuda", 1)), ("init", "nccl")]
    assert pick_device("cuda:0", local_rank=1) == torch.device("cuda", 0)  # an explicit index is kept


def _nccl_rank(rank: int, port: int) -> None:
    os.environ.update(WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))  # fmt: skip
    from seq2seq.devices import pick_device

    device = pick_device("cuda", local_rank=distributed.local_rank())
    distributed.initialize(device)
    assert torch.cuda.current_device() == rank
    assert distributed.agree([rank, 1 - rank, 0], device) == [1, 1, 0]  # the stop decision's all-reduce
    distributed.barrier()
    dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_nccl_ranks_use_their_own_gpus() -> None:
    mp.spawn(_nccl_rank, args=(29511,), nprocs=2, join=True)

"""trainer.strategy=fsdp on 2 gloo ranks: one rank killed with SIGKILL in the middle of writing its shards,
then the run resumed from last.pt, gives bitwise the weights of the run that was never interrupted
(dropout on, so every rank's random streams must be restored too); the half-written directory is never
taken for a checkpoint and is removed at the next save."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from test_fsdp import WORLD, leave_gloo, sharded_trainer

from seq2seq.checkpoint import load_checkpoint
from seq2seq.train import sharded_checkpoint
from seq2seq.train.sharding import FSDP

UPDATES, SAVE_EVERY, KILLED_IN = 8, 3, 6  # checkpoints at 3 and 6; rank 1 dies writing update 6's shards
SETTINGS = {
    "strategy": FSDP,
    "world": WORLD,
    "dropout": 0.3,
    "max_updates": UPDATES,
    "save_every": SAVE_EVERY,
}


def _die_while_saving(step: int) -> None:
    """This rank writes its shards of update `step`, then is killed before the directory is complete."""
    dcp = sharded_checkpoint._checkpointing()
    save = dcp.save

    def save_then_die(state, *, checkpoint_id):
        written = save(state, checkpoint_id=checkpoint_id)
        if Path(checkpoint_id).name.startswith(f".step_{step}."):
            os.kill(os.getpid(), signal.SIGKILL)
        return written

    dcp.save = save_then_die


def _rank(rank: int, store: str, out_dir: str, phase: str) -> None:
    os.environ.update(WORLD_SIZE=str(WORLD), RANK=str(rank))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store, WORLD), rank=rank, world_size=WORLD,
                            timeout=timedelta(seconds=60))  # fmt: skip
    if phase == "first":
        sharded_trainer(Path(out_dir) / "straight", rank=rank, **SETTINGS).fit()
        if rank == 1:
            _die_while_saving(KILLED_IN)
        sharded_trainer(Path(out_dir) / "killed", rank=rank, **SETTINGS).fit()
    else:
        trainer = sharded_trainer(Path(out_dir) / "killed", rank=rank, **SETTINGS)
        trainer.resume_from(Path(out_dir) / "killed" / "last.pt")
        trainer.fit()
    leave_gloo()


@pytest.mark.slow
def test_a_rank_killed_mid_save_resumes_bitwise(tmp_path: Path) -> None:
    with pytest.raises((mp.ProcessExitedException, mp.ProcessRaisedException)):  # rank 1 killed, rank 0 fails
        mp.spawn(_rank, args=(str(tmp_path / "store_first"), str(tmp_path), "first"), nprocs=WORLD, join=True)
    killed = tmp_path / "killed"
    assert load_checkpoint(killed / "last.pt")["step"] == SAVE_EVERY
    unfinished = list((killed / "sharded").glob(f".step_{KILLED_IN}.*.tmp"))
    assert unfinished and not (unfinished[0] / "COMPLETE").exists()
    mp.spawn(_rank, args=(str(tmp_path / "store_resume"), str(tmp_path), "resume"), nprocs=WORLD, join=True)
    straight = load_checkpoint(tmp_path / "straight" / "last.pt")
    resumed = load_checkpoint(killed / "last.pt")
    assert straight["step"] == resumed["step"] == UPDATES
    for name, value in straight["model"].items():
        assert torch.equal(value, resumed["model"][name]), name
    assert not list((killed / "sharded").glob(".*.tmp"))
    named = {load_checkpoint(path)["sharded_state"] for path in killed.glob("*.pt")}
    assert named == {f"sharded/{entry.name}" for entry in (killed / "sharded").iterdir()}

"""Ranks agree on every stop decision: a clock that runs out or a signal on one rank stops all of them
at the same update, with one checkpoint, instead of leaving the others waiting in a collective."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from test_distributed_resume import ranked_trainer

from seq2seq.train import loop as loop_module

WORLD = 2
COLLECTIVE_TIMEOUT = timedelta(seconds=30)  # a rank left waiting fails the test instead of hanging it


class _ClockAheadAfter:
    """time.monotonic() for one rank: real time, jumped an hour ahead once `updates` updates are done."""

    def __init__(self, trainer, updates: int) -> None:
        self.trainer, self.updates, self.real = trainer, updates, time.monotonic

    def __call__(self) -> float:
        ahead = self.trainer.state.step >= self.updates
        return self.real() + (3600.0 if ahead else 0.0)


def _signal_self_after(trainer, updates: int, signum: int) -> None:
    """Deliver `signum` to this process (only this rank) right after update `updates`."""
    original = trainer.reporter.update

    def update(**kwargs):
        original(**kwargs)
        if kwargs["step"] == updates:
            os.kill(os.getpid(), signum)

    trainer.reporter.update = update


def _rank(rank: int, store: str, out_dir: str, trigger: str) -> None:
    os.environ.update(WORLD_SIZE=str(WORLD), RANK=str(rank))
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", store=dist.FileStore(store, WORLD), rank=rank, world_size=WORLD, timeout=COLLECTIVE_TIMEOUT
    )
    trainer = ranked_trainer(Path(out_dir), rank, WORLD, max_updates=40)
    trainer.options.save_every = None
    if trigger == "max_minutes":
        trainer.options.max_minutes = 30.0
        if rank == 1:  # only this rank's clock says the time is up
            loop_module.time.monotonic = _ClockAheadAfter(trainer, updates=3)
    elif rank == 1:
        _signal_self_after(trainer, updates=3, signum=signal.SIGTERM)
    state = trainer.fit()
    outcome = {
        "step": state.step,
        "stop": trainer.stop_requested,
        "signal": trainer.stopping_signal.name if trainer.stopping_signal else None,
    }
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(outcome))
    dist.destroy_process_group()


def _run(tmp_path: Path, trigger: str) -> list[dict]:
    out_dir = tmp_path / trigger
    out_dir.mkdir()
    mp.spawn(_rank, args=(str(tmp_path / f"store_{trigger}"), str(out_dir), trigger), nprocs=WORLD, join=True)
    return [json.loads((out_dir / f"rank{rank}.json").read_text()) for rank in range(WORLD)]


@pytest.mark.slow
def test_one_ranks_clock_running_out_stops_every_rank_at_the_same_update(tmp_path: Path) -> None:
    outcomes = _run(tmp_path, "max_minutes")
    assert outcomes[0] == outcomes[1]
    assert outcomes[0]["stop"] == "max_minutes"
    assert outcomes[0]["step"] == 3
    saved = torch.load(tmp_path / "max_minutes" / "last.pt", weights_only=True)
    assert saved["step"] == 3 and len(saved["rng_per_rank"]) == WORLD


@pytest.mark.slow
def test_sigterm_to_one_rank_stops_every_rank_with_one_checkpoint(tmp_path: Path) -> None:
    outcomes = _run(tmp_path, "sigterm")
    assert outcomes[0] == outcomes[1]
    assert outcomes[0]["stop"] == "signal SIGTERM" and outcomes[0]["signal"] == "SIGTERM"
    assert outcomes[0]["step"] == 3
    run_dir = tmp_path / "sigterm"
    assert sorted(p.name for p in run_dir.glob("*.pt")) == ["last.pt"]
    saved = torch.load(run_dir / "last.pt", weights_only=True)
    assert saved["step"] == 3 and len(saved["rng_per_rank"]) == WORLD
    assert saved["train_state"]["history"] == []  # stopped, not validated: the run resumes from here

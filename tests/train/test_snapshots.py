"""trainer.average_fraction's snapshots: which updates the final window holds, what is written and
deleted as a run goes on, and what a resumed run finds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

from seq2seq.checkpoint import load_checkpoint
from seq2seq.errors import UserError
from seq2seq.train.snapshots import SnapshotPolicy, Snapshots


def test_the_window_is_the_last_fraction_of_the_updates() -> None:
    policy = SnapshotPolicy(fraction=0.2, every=25, max_count=16)
    assert policy.window_start(900) == 720 and policy.window_start(1000) == 800
    assert policy.window_start(7) == 6  # floor(1.4) = 1 update
    assert SnapshotPolicy(fraction=0.29).window_start(100) == 71  # 0.29 * 100 is 28.999... in floats
    assert SnapshotPolicy(fraction=1.0).window_start(40) == 0
    # A slow CPU's 30 minutes (~900 updates) still average 8 weights: updates 725, 750, ..., 900
    assert [s for s in range(901) if policy.keeps(s, 900)] == list(range(725, 901, 25))


def test_the_spacing_doubles_to_keep_at_most_max_count_and_never_shrinks() -> None:
    policy = SnapshotPolicy(fraction=0.5, every=2, max_count=3)
    spacings = [policy.spacing(step) for step in range(1, 200)]
    assert spacings == sorted(spacings) and spacings[0] == 2 and spacings[-1] > 2
    for step in range(1, 200):
        assert len([s for s in range(step + 1) if policy.keeps(s, step)]) <= 3


class Recorder(nn.Module):
    """A model whose only weight is the update it was last set to."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))


def run_updates(snapshots: Snapshots, steps: range) -> list[list[int]]:
    """Call the hook as the loop does after each update; the snapshot steps on disk after each."""
    model, seen = Recorder(), []
    for step in steps:
        model.weight.data.fill_(float(step))
        snapshots(model, step)
        seen.append(snapshots.steps())
    return seen


def test_snapshots_are_written_every_n_updates_and_pruned_as_the_run_goes(tmp_path: Path) -> None:
    snapshots = Snapshots(tmp_path, SnapshotPolicy(fraction=0.5, every=2, max_count=16))
    seen = run_updates(snapshots, range(1, 13))
    assert seen[3] == [2, 4]  # update 4: window [2, 4]
    assert seen[5] == [4, 6]  # update 6: window [3, 6]; 2 is gone
    assert seen[11] == [6, 8, 10, 12]  # update 12: window [6, 12]
    assert max(len(files) for files in seen) == 4
    payload = load_checkpoint(snapshots.path(10))
    assert set(payload) == {"model", "step", "snapshot", "format_version"}  # weights only
    assert float(payload["model"]["weight"]) == 10.0 and payload["step"] == 10
    assert snapshots.for_average(13) == [8, 10, 12]  # a run ending at 13: window [7, 13]


def test_a_long_run_keeps_evenly_spaced_snapshots(tmp_path: Path) -> None:
    snapshots = Snapshots(tmp_path, SnapshotPolicy(fraction=1.0, every=1, max_count=4))
    seen = run_updates(snapshots, range(1, 17))
    assert seen[2] == [1, 2, 3]  # spacing 1
    assert seen[11] == [4, 8, 12]  # update 12: spacing 4 (1, then 2, then 4)
    assert seen[15] == [8, 16]  # update 16: spacing 8
    assert all(len(files) <= 4 for files in seen)


def test_a_resumed_run_keeps_its_snapshots_and_drops_those_after_its_checkpoint(tmp_path: Path) -> None:
    policy = SnapshotPolicy(fraction=0.5, every=2, max_count=16)
    run_updates(Snapshots(tmp_path, policy), range(1, 11))  # interrupted after update 10 ...
    resumed = Snapshots(tmp_path, policy)  # ... whose last.pt was written at update 7
    assert resumed.drop_after(7) == [8, 10] and resumed.steps() == [6]
    run_updates(resumed, range(8, 13))
    assert resumed.steps() == [6, 8, 10, 12]
    assert float(load_checkpoint(resumed.path(8))["model"]["weight"]) == 8.0


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (SnapshotPolicy(fraction=0.0), "trainer.average_fraction=0.0 must be in (0, 1]"),
        (SnapshotPolicy(fraction=1.5), "trainer.average_fraction=1.5 must be in (0, 1]"),
        (SnapshotPolicy(fraction=float("nan")), "trainer.average_fraction=nan must be in (0, 1]"),
        (SnapshotPolicy(every=0), "trainer.snapshot_every=0 must be at least 1"),
        (SnapshotPolicy(max_count=1), "trainer.max_snapshots=1 must be at least 2"),
    ],
)
def test_settings_that_cannot_work_are_refused(policy: SnapshotPolicy, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        policy.check()

"""Weights-only snapshots for `trainer.average_fraction`: averaging the last part of a run, however long.

A fixed number of checkpoints spans a share of the run that depends on how many updates the machine
manages; a fraction does not. The loop calls `Snapshots` after every update; it writes
snapshot_{step}.pt (the model's weights and the step, no optimizer state) every `every` updates and deletes
each snapshot that can no longer fall in the final window: at update t the window is the last
floor(fraction * t) updates, [t - floor(fraction * t), t], whose start only moves forward, so a snapshot
before it is never needed again. A long run would keep fraction * t / every snapshots, so the spacing
doubles whenever the window could hold more than `max_count` of them (snapshots off the new spacing are
deleted); the snapshots kept stay evenly spaced. Everything follows from the step and the files, so a
resumed run continues as if never stopped.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from seq2seq.checkpoint import save_checkpoint
from seq2seq.errors import UserError
from seq2seq.train.lora import model_state

log = logging.getLogger(__name__)

PATTERN = re.compile(r"snapshot_(\d+)\.pt")


@dataclass(frozen=True)
class SnapshotPolicy:
    """Which updates' weights the final average takes. Defaults: configs/trainer/default.yaml's."""

    fraction: float = 0.2
    every: int = 25
    max_count: int = 16

    def check(self) -> None:
        """One-line errors for settings that cannot work."""
        if not (isinstance(self.fraction, (int, float)) and 0 < self.fraction <= 1):
            raise UserError(
                f"trainer.average_fraction={self.fraction} must be in (0, 1]: the share of the run's last "
                "updates to average (e.g. 0.2), or null for no averaging by fraction"
            )
        if self.every < 1:
            raise UserError(f"trainer.snapshot_every={self.every} must be at least 1 (e.g. 25)")
        if self.max_count < 2:
            raise UserError(f"trainer.max_snapshots={self.max_count} must be at least 2 (e.g. 16)")

    def window_start(self, step: int) -> int:
        """The first update of the final window when `step` is the last: the last fraction * step updates."""
        return step - math.floor(self.fraction * step + 1e-9)  # + 1e-9: 0.2 * 900 is 180, not 179.99...

    def spacing(self, step: int) -> int:
        """Updates between snapshots at `step`: `every`, doubled until the window holds at most max_count.

        Counted as floor(span / spacing) + 1, which never decreases as the run goes on, so the spacing
        never shrinks and a snapshot deleted for being off it is never wanted again.
        """
        span, spacing = step - self.window_start(step), self.every
        while span // spacing + 1 > self.max_count:
            spacing *= 2
        return spacing

    def keeps(self, snapshot: int, step: int) -> bool:
        """Whether the snapshot of update `snapshot` may still be averaged when the run is at `step`."""
        return self.window_start(step) <= snapshot <= step and snapshot % self.spacing(step) == 0


class Snapshots:
    """Callable(model, step) after every update (rank 0 only): write this update's snapshot if due, prune."""

    def __init__(self, run_dir: Path, policy: SnapshotPolicy) -> None:
        self.run_dir, self.policy = Path(run_dir), policy

    def __call__(self, model: nn.Module, step: int) -> None:
        if step % self.policy.spacing(step) != 0:
            return
        save_checkpoint(self.path(step), {**model_state(model), "step": step, "snapshot": True})
        self.prune(step)

    def path(self, step: int) -> Path:
        return self.run_dir / f"snapshot_{step}.pt"

    def steps(self) -> list[int]:
        """The steps of the snapshot files in the run directory, in order."""
        if not self.run_dir.is_dir():
            return []
        found = (PATTERN.fullmatch(p.name) for p in self.run_dir.iterdir())
        return sorted(int(match.group(1)) for match in found if match)

    def prune(self, step: int) -> list[int]:
        """Delete the snapshots that can no longer be averaged (files after `step` are left alone)."""
        doomed = [s for s in self.steps() if s <= step and not self.policy.keeps(s, step)]
        for old in doomed:
            self.path(old).unlink(missing_ok=True)
        if doomed:
            log.debug("removed snapshot(s) of update(s) %s", ", ".join(map(str, doomed)))
        return doomed

    def drop_after(self, step: int) -> list[int]:
        """On resume from update `step`: delete the snapshots the interrupted part of the run wrote after
        it (the resumed run writes its own)."""
        doomed = [s for s in self.steps() if s > step]
        for newer in doomed:
            self.path(newer).unlink(missing_ok=True)
        if doomed:
            log.info("removed snapshot(s) of update(s) %s, written after update %d, which the run resumes "
                     "from", ", ".join(map(str, doomed)), step)  # fmt: skip
        return doomed

    def for_average(self, step: int) -> list[int]:
        """The snapshot steps the final average takes at the end of a run at `step` (after pruning)."""
        self.prune(step)
        return [s for s in self.steps() if self.policy.keeps(s, step)]

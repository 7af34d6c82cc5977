"""Learning-rate schedules as pure functions of the update step, and the adapter that applies one.

``step`` counts optimizer updates from 1 (the first update uses ``schedule(1)``). Every schedule
returns the absolute learning rate, so a config picks one with a partial::

    schedule:
      _target_: seq2seq.train.schedules.noam
      _partial_: true
      d_model: 512
      warmup: 4000

and ``ScheduledLR(optimizer, schedule)`` writes ``schedule(step)`` into every parameter group before
each update. Because the learning rate depends on the step alone, resuming needs only the step count.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from seq2seq.errors import UserError

ScheduleFn = Callable[[int], float]


def _check_step(step: int) -> None:
    if step < 1:
        raise UserError(
            f"learning-rate schedules count steps from 1, got step={step}; pass the update number"
        )


def _check_warmup(warmup: int) -> None:
    if warmup < 1:
        raise UserError(f"warmup={warmup} must be at least 1; use warmup=1 for no warmup")


def _check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise UserError(f"{name}={value} must be positive; fix it in the schedule config")


def noam(step: int, *, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """Vaswani et al. (2017): linear rise for ``warmup`` steps, then decay as 1/sqrt(step).

    Peaks exactly at ``step == warmup`` with ``scale / sqrt(d_model * warmup)``.
    """
    _check_step(step)
    _check_warmup(warmup)
    _check_positive("d_model", d_model)
    _check_positive("scale", scale)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def inverse_sqrt(step: int, *, peak_lr: float, warmup: int, init_lr: float = 0.0) -> float:
    """fairseq's inverse_sqrt: linear from ``init_lr`` to ``peak_lr`` over ``warmup`` steps, then
    ``peak_lr * sqrt(warmup / step)``; both pieces equal ``peak_lr`` at ``step == warmup``."""
    _check_step(step)
    _check_warmup(warmup)
    _check_positive("peak_lr", peak_lr)
    if not 0.0 <= init_lr <= peak_lr:
        raise UserError(f"init_lr={init_lr} must lie in [0, peak_lr={peak_lr}]; lower it")
    if step <= warmup:
        return init_lr + (peak_lr - init_lr) * step / warmup
    return peak_lr * math.sqrt(warmup / step)


def constant(step: int, *, peak_lr: float, warmup: int = 1) -> float:
    """Linear warmup to ``peak_lr`` over ``warmup`` steps, then ``peak_lr`` for good: what fine-tuning a
    trained model often uses (``warmup=1``: no warmup, ``peak_lr`` from the first update)."""
    _check_step(step)
    _check_warmup(warmup)
    _check_positive("peak_lr", peak_lr)
    return peak_lr * min(1.0, step / warmup)


def cosine(step: int, *, peak_lr: float, warmup: int, total_steps: int, min_lr: float = 1e-5) -> float:
    """Linear warmup to ``peak_lr``, then a half cosine down to ``min_lr`` at ``total_steps``.

    Steps past ``total_steps`` stay at ``min_lr`` so that training a little longer is harmless.
    """
    _check_step(step)
    _check_warmup(warmup)
    _check_positive("peak_lr", peak_lr)
    if total_steps <= warmup:
        raise UserError(f"total_steps={total_steps} must exceed warmup={warmup}; raise total_steps")
    if not 0.0 <= min_lr <= peak_lr:
        raise UserError(f"min_lr={min_lr} must lie in [0, peak_lr={peak_lr}]; lower it")
    if step <= warmup:
        return peak_lr * step / warmup
    progress = min(1.0, (step - warmup) / (total_steps - warmup))
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress))


class ScheduledLR:
    """Sets the learning rate of every parameter group to ``schedule(step)`` for the next update.

    Call ``step()`` once after each ``optimizer.step()``. The state is the number of updates done,
    so ``load_state_dict`` restores the exact learning rate; the schedule itself comes from the
    config. Deliberately not a ``torch.optim.lr_scheduler.LRScheduler``: those multiply a base
    learning rate and pickle their lambdas, neither of which an absolute schedule needs.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, schedule: ScheduleFn, *, updates_done: int = 0):
        if updates_done < 0:
            raise UserError(f"updates_done={updates_done} must be non-negative; pass the resumed step")
        self.optimizer = optimizer
        self.schedule = schedule
        self.updates_done = updates_done
        self._apply()  # validates the schedule's arguments now rather than at the first update

    def lr_at(self, step: int) -> float:
        """The learning rate of update ``step`` (from 1), checked to be a finite non-negative number."""
        lr = float(self.schedule(step))
        if not (math.isfinite(lr) and lr >= 0):
            raise UserError(f"the learning-rate schedule gave {lr} at step {step}; check its arguments")
        return lr

    def step(self) -> None:
        """Record one finished update and set the learning rate of the next."""
        self.updates_done += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        """Current learning rate of each parameter group (the name matches torch schedulers)."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        return {"updates_done": self.updates_done}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.updates_done = int(state["updates_done"])
        self._apply()

    def _apply(self) -> None:
        lr = self.lr_at(self.updates_done + 1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr

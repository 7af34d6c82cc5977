"""Learning-rate schedules as pure functions, and exact resumption of the adapter."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
import torch

from seq2seq.errors import UserError
from seq2seq.train.schedules import ScheduledLR, cosine, inverse_sqrt, noam


@pytest.mark.parametrize("warmup", [1, 10, 4000])
def test_noam_peaks_exactly_at_warmup(warmup):
    steps = range(1, 3 * warmup + 10)
    values = [noam(s, d_model=512, warmup=warmup) for s in steps]
    assert steps[max(range(len(values)), key=values.__getitem__)] == warmup
    assert noam(warmup, d_model=512, warmup=warmup) == pytest.approx(1 / math.sqrt(512 * warmup), rel=1e-12)


def test_noam_shape_and_scale():
    assert noam(1, d_model=512, warmup=4000) == pytest.approx(512**-0.5 * 4000**-1.5)
    assert noam(16000, d_model=512, warmup=4000) == pytest.approx(512**-0.5 * 16000**-0.5)
    assert noam(100, d_model=512, warmup=4000, scale=2.0) == pytest.approx(
        2 * noam(100, d_model=512, warmup=4000)
    )


def test_inverse_sqrt_is_continuous_at_warmup():
    kw = {"peak_lr": 5e-4, "warmup": 100, "init_lr": 1e-7}
    assert inverse_sqrt(100, **kw) == pytest.approx(5e-4)
    assert inverse_sqrt(101, **kw) == pytest.approx(5e-4 * math.sqrt(100 / 101))
    assert abs(inverse_sqrt(101, **kw) - inverse_sqrt(100, **kw)) < 5e-4 / 100
    assert inverse_sqrt(400, **kw) == pytest.approx(2.5e-4)
    assert inverse_sqrt(1, peak_lr=1.0, warmup=4) == pytest.approx(0.25)


def test_cosine_warms_up_then_ends_at_min_lr():
    kw = {"peak_lr": 1e-3, "warmup": 10, "total_steps": 110, "min_lr": 1e-5}
    assert cosine(5, **kw) == pytest.approx(5e-4)
    assert cosine(10, **kw) == pytest.approx(1e-3)
    assert cosine(60, **kw) == pytest.approx((1e-3 + 1e-5) / 2)
    assert cosine(110, **kw) == pytest.approx(1e-5)
    assert cosine(500, **kw) == pytest.approx(1e-5)
    values = [cosine(s, **kw) for s in range(10, 111)]
    assert all(a >= b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize(
    "call",
    [
        lambda: noam(1, d_model=512, warmup=0),
        lambda: noam(0, d_model=512, warmup=10),
        lambda: noam(1, d_model=0, warmup=10),
        lambda: inverse_sqrt(1, peak_lr=1e-3, warmup=0),
        lambda: inverse_sqrt(1, peak_lr=1e-3, warmup=10, init_lr=1.0),
        lambda: cosine(1, peak_lr=1e-3, warmup=0, total_steps=10),
        lambda: cosine(1, peak_lr=1e-3, warmup=10, total_steps=10),
        lambda: cosine(1, peak_lr=1e-3, warmup=10, total_steps=100, min_lr=1.0),
    ],
)
def test_invalid_arguments_raise_user_error(call):
    with pytest.raises(UserError):
        call()


def _optimizer() -> torch.optim.Optimizer:
    params = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(3))]
    return torch.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=123.0)


def test_scheduled_lr_uses_schedule_from_step_one():
    schedule = functools.partial(noam, d_model=64, warmup=5)  # what Hydra's _partial_ builds
    optimizer = _optimizer()
    scheduler = ScheduledLR(optimizer, schedule)
    seen = []
    for _ in range(8):
        seen.append(scheduler.get_last_lr())
        optimizer.step()
        scheduler.step()
    assert seen == [[schedule(s)] * 2 for s in range(1, 9)]


def test_scheduled_lr_resumes_exactly():
    schedule = functools.partial(cosine, peak_lr=1e-3, warmup=3, total_steps=20)
    first = ScheduledLR(_optimizer(), schedule)
    for _ in range(7):
        first.step()
    state = first.state_dict()
    assert state == {"updates_done": 7}

    resumed = ScheduledLR(_optimizer(), schedule)
    resumed.load_state_dict(state)
    for _ in range(5):
        assert resumed.get_last_lr() == first.get_last_lr()
        first.step()
        resumed.step()


def test_scheduled_lr_checks_schedule_at_construction():
    with pytest.raises(UserError, match="warmup"):
        ScheduledLR(_optimizer(), functools.partial(noam, d_model=512, warmup=0))
    with pytest.raises(UserError, match="gave nan"):
        ScheduledLR(_optimizer(), lambda step: math.nan)

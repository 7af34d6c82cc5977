"""The training loop: exact resumption, gradient accumulation, non-finite handling, stopping rules."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_models import TINY, tiny_decoder_only, tiny_model

from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.collate import make_batch
from seq2seq.data.dataset import ParallelDataset
from seq2seq.errors import UserError
from seq2seq.train.loop import Trainer, TrainerOptions
from seq2seq.train.loss import label_smoothed_nll, projected_label_smoothed_nll
from seq2seq.train.optim import build_adamw
from seq2seq.train.reporting import Reporter
from seq2seq.train.schedules import ScheduledLR, noam

VOCAB, PAD, BOS, EOS = 40, 0, 2, 3


def toy_dataset(n: int = 48, seed: int = 0) -> ParallelDataset:
    """Copy-and-reverse pairs of random lengths: learnable, and varied enough for real batching."""
    rng = np.random.default_rng(seed)
    sources = [rng.integers(4, VOCAB, size=rng.integers(2, 9)).tolist() for _ in range(n)]
    return ParallelDataset.from_sequences(sources, [s[::-1] for s in sources], eos_id=EOS)


# The loop's settings for the toy runs: no validation, fp32, a checkpoint every 3 updates, 2 kept.
TOY_OPTIONS = {"validate_every": None, "validate_every_minutes": None, "precision": "fp32", "save_every": 3,
               "keep_last": 2, "log_every": 1}  # fmt: skip


# The tiny model of each family (and variant) the resume tests run with.
FAMILIES = {
    "encoder_decoder": tiny_model,
    "decoder_only": tiny_decoder_only,
    "prefix_lm": partial(tiny_decoder_only, prefix_lm=True),
}


def make_trainer(
    tmp_path: Path,
    *,
    dropout: float = 0.1,
    loss_fn: Any = None,
    family: str = "encoder_decoder",
    device: str = "cpu",
    **options: Any,
) -> Trainer:
    """A Trainer of the tiny model of `family` (FAMILIES) on the toy set, on `device`; `options` are
    TrainerOptions fields over TOY_OPTIONS."""
    torch.manual_seed(0)
    dataset = toy_dataset()
    model = FAMILIES[family](VOCAB, pad_id=PAD, dropout=dropout).to(device)
    optimizer = build_adamw(model, lr=0.0)
    scheduler = ScheduledLR(optimizer, partial(noam, d_model=TINY["d_model"], warmup=4, scale=1.0))
    sampler = TokenBatchSampler(dataset.src_lengths, dataset.tgt_lengths, max_tokens=60, seed=3)
    return Trainer(
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        loss_fn=loss_fn or partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD),
        batches=sampler,
        make_batch=lambda indices: make_batch(dataset, indices, pad_id=PAD, bos_id=BOS, eos_id=EOS),
        validate=None,
        reporter=Reporter(log_dir=None, progress_bar=False),
        output_dir=tmp_path,
        checkpoint_extras={"model_config": model.config},
        options=TrainerOptions(**{**TOY_OPTIONS, **options}),
        device=torch.device(device),
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_resume_after_interruption_is_bitwise_identical(tmp_path: Path, family: str) -> None:
    # 18 updates cross two epochs (the toy set gives about 7 batches per epoch).
    straight = make_trainer(tmp_path / "straight", max_updates=18, family=family)
    straight.fit()
    interrupted = make_trainer(tmp_path / "resumed", max_updates=9, family=family)
    interrupted.fit()
    resumed = make_trainer(tmp_path / "resumed", max_updates=18, family=family)
    resumed.resume_from(tmp_path / "resumed" / "last.pt")
    assert resumed.state.step == 9
    resumed.fit()
    for (name, a), (_, b) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert torch.equal(a, b), name
    assert resumed.state.epoch == straight.state.epoch


@pytest.mark.skipif(not torch.cuda.is_available(), reason="runs the CUDA path; needs a CUDA device")
def test_resume_on_cuda_in_bf16_is_bitwise_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path of exact resumption: batches moved to the device, bf16 autocast, dropout drawn from
    the CUDA generator (saved and restored with the checkpoint). Deterministic kernels, so that a
    difference can only come from the resume."""
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        settings = {"device": "cuda", "precision": "bf16"}
        straight = make_trainer(tmp_path / "straight", max_updates=18, **settings)
        straight.fit()
        make_trainer(tmp_path / "resumed", max_updates=9, **settings).fit()
        resumed = make_trainer(tmp_path / "resumed", max_updates=18, **settings)
        resumed.resume_from(tmp_path / "resumed" / "last.pt")
        resumed.fit()
    finally:
        torch.use_deterministic_algorithms(deterministic)
    assert straight.precision == "bf16" and next(straight.model.parameters()).is_cuda
    for (name, a), (_, b) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert torch.equal(a, b), name


@pytest.mark.slow
@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only"])
def test_resume_from_numbered_checkpoint_after_kill(tmp_path: Path, family: str) -> None:
    """A run killed after checkpoint_6 (later updates lost) resumes from it and still matches.
    (tests/train/test_resume_decoder_only.py kills a real seq2seq-train process.)"""
    straight = make_trainer(tmp_path / "straight", max_updates=12, family=family)
    straight.fit()
    partial_run = make_trainer(tmp_path / "killed", max_updates=8, family=family)
    partial_run.fit()  # wrote checkpoint_6.pt; pretend the process died at update 8
    resumed = make_trainer(tmp_path / "killed", max_updates=12, family=family)
    resumed.resume_from(tmp_path / "killed" / "checkpoint_6.pt")
    resumed.fit()
    assert all(torch.equal(a, b) for a, b in zip(straight.model.parameters(), resumed.model.parameters()))


@pytest.mark.slow
def test_checkpoint_rotation_keeps_last_n(tmp_path: Path) -> None:
    make_trainer(tmp_path, max_updates=12, save_every=3).fit()
    numbered = sorted(p.name for p in tmp_path.glob("checkpoint_*.pt"))
    assert numbered == ["checkpoint_12.pt", "checkpoint_9.pt"]
    assert (tmp_path / "last.pt").is_file()


@pytest.mark.slow
def test_rotation_never_counts_or_deletes_checkpoints_numbered_after_the_run(tmp_path: Path) -> None:
    """A file the run did not write (checkpoint_9000.pt, numbered beyond its updates) neither pushes out
    the run's own checkpoints nor is deleted by it."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "checkpoint_9000.pt").write_bytes(b"another run's")
    make_trainer(tmp_path, max_updates=10).fit()
    names = {p.name for p in tmp_path.glob("checkpoint_*.pt")}
    assert names == {"checkpoint_9.pt", "checkpoint_10.pt", "checkpoint_9000.pt"}  # keep_last=2 of its own
    assert (tmp_path / "checkpoint_9000.pt").read_bytes() == b"another run's"


def test_accumulation_equals_one_big_batch(tmp_path: Path) -> None:
    """update_freq=2 over batches a, b gives the gradient of the token-weighted loss over a and b together."""
    trainer = make_trainer(tmp_path, max_updates=1, update_freq=2, dropout=0.0)
    model = trainer.model
    sampler = trainer.batches
    first, second = [trainer.make_batch(ix) for ix in list(sampler.batches(0))[:2]]
    loss_fn = partial(label_smoothed_nll, epsilon=0.1, pad_id=PAD)
    total = sum(loss_fn(model(b.src, b.tgt_in), b.tgt_out).loss_sum for b in (first, second))
    (total / (first.n_tgt_tokens + second.n_tgt_tokens)).backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    captured = {}
    original_step = trainer.optimizer.step

    def capture_then_step(*args, **kwargs):
        captured["grads"] = [p.grad.clone() for p in model.parameters()]
        return original_step(*args, **kwargs)

    trainer.optimizer.step = capture_then_step
    trainer.options.clip_norm = None
    trainer.fit()
    for got, want in zip(captured["grads"], expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_nonfinite_updates_are_skipped_then_stop_the_run(tmp_path: Path) -> None:
    calls = {"n": 0}

    def exploding_loss(hidden, output_weight, target):
        calls["n"] += 1
        out = projected_label_smoothed_nll(hidden, output_weight, target, epsilon=0.1, pad_id=PAD)
        return out._replace(loss_sum=out.loss_sum * float("nan"))

    trainer = make_trainer(tmp_path, max_updates=50, loss_fn=exploding_loss, max_consecutive_nonfinite=3)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    with pytest.raises(UserError, match=r"3 consecutive non-finite .* update 3"):
        trainer.fit()
    assert trainer.state.nonfinite_skipped == 3
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def test_max_minutes_budget_stops_the_run(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, max_updates=10_000)
    trainer.options.max_minutes = 1e-9  # over as soon as the first update has run
    state = trainer.fit()
    assert state.step == 1 and trainer.stop_requested == "max_minutes"
    assert (tmp_path / "last.pt").is_file()


def test_rerunning_a_finished_run_does_nothing(tmp_path: Path) -> None:
    make_trainer(tmp_path, max_updates=4).fit()
    again = make_trainer(tmp_path, max_updates=4)
    again.resume_from(tmp_path / "last.pt")
    before = [p.detach().clone() for p in again.model.parameters()]
    assert again.fit().step == 4
    assert all(torch.equal(a, b) for a, b in zip(before, again.model.parameters()))

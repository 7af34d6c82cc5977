"""trainer.freeze: the parameters it names stay bitwise as they were through training (on one process and
under DistributedDataParallel), never reach the optimizer, and take their tied names along."""

from __future__ import annotations

import logging
import os
from functools import partial
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from test_loop import BOS, EOS, PAD, TOY_OPTIONS, VOCAB, toy_dataset
from tiny_models import TINY, tiny_model

from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.collate import make_batch
from seq2seq.errors import UserError
from seq2seq.train.freezing import freeze_parameters
from seq2seq.train.loop import Trainer, TrainerOptions
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.optim import build_adamw
from seq2seq.train.reporting import Reporter
from seq2seq.train.schedules import ScheduledLR, constant

FROZEN = ["encoder.layers.0.*", "*final_norm*"]


def frozen_trainer(
    out_dir: Path, patterns: list[str], *, max_updates: int, rank: int = 0, world: int = 1
) -> Trainer:
    """A tiny model with `patterns` frozen before its optimizer is built, on the toy set (this rank's
    share), dropout on."""
    torch.manual_seed(0)
    dataset = toy_dataset()
    model = tiny_model(VOCAB, pad_id=PAD, dropout=0.1)
    freeze_parameters(model, patterns)
    optimizer = build_adamw(model, lr=0.0, weight_decay=0.1)  # decay would move a frozen weight
    sampler = TokenBatchSampler(dataset.src_lengths, dataset.tgt_lengths, max_tokens=60, seed=3, rank=rank,
                                world_size=world)  # fmt: skip
    return Trainer(
        model=model if world == 1 else torch.nn.parallel.DistributedDataParallel(model),
        optimizer=optimizer, scheduler=ScheduledLR(optimizer, partial(constant, peak_lr=3e-3, warmup=2)),
        loss_fn=partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD), batches=sampler,
        make_batch=lambda indices: make_batch(dataset, indices, pad_id=PAD, bos_id=BOS, eos_id=EOS),
        validate=None, reporter=Reporter(log_dir=None, progress_bar=False), output_dir=out_dir,
        checkpoint_extras={"model_config": model.config},
        options=TrainerOptions(**{**TOY_OPTIONS, "max_updates": max_updates, "save_every": None,
                                  "freeze": patterns}),
        device=torch.device("cpu"),
    )  # fmt: skip


def frozen_names(model: torch.nn.Module) -> set[str]:
    return {name for name, p in model.named_parameters(remove_duplicate=False) if not p.requires_grad}


@pytest.mark.slow
def test_frozen_parameters_are_bitwise_unchanged_after_20_updates(tmp_path: Path) -> None:
    trainer = frozen_trainer(tmp_path, FROZEN, max_updates=20)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    frozen = frozen_names(trainer.model)
    assert frozen and all(name.startswith("encoder.layers.0.") or "final_norm" in name for name in frozen)
    trainer.fit()
    assert trainer.state.step == 20
    after = dict(trainer.model.named_parameters())
    assert all(torch.equal(after[name], before[name]) for name in frozen)
    assert all(not torch.equal(after[name], before[name]) for name in before if name not in frozen)
    optimized = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not any(id(after[name]) in optimized for name in frozen)
    assert all(after[name].grad is None for name in frozen)


def test_freezing_a_tied_embedding_freezes_its_output_projection(caplog) -> None:
    model = tiny_model(VOCAB)  # encoder, decoder and output share one matrix
    with caplog.at_level(logging.INFO, logger="seq2seq.train.freezing"):
        result = freeze_parameters(model, ["output.weight"])
    assert not model.encoder.embedding.weight.requires_grad and not model.output.weight.requires_grad
    assert result.names == ("encoder.embedding.weight",) and result.frozen == VOCAB * TINY["d_model"]
    assert result.trained == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert (
        "encoder.embedding.weight = decoder.embedding.weight = output.weight is one tied tensor"
        in caplog.text
    )
    untied = tiny_model(VOCAB, share_embeddings=False, share_decoder_output=False)
    freeze_parameters(untied, ["*embedding*"])
    assert frozen_names(untied) == {"encoder.embedding.weight", "decoder.embedding.weight"}


def test_a_pattern_that_matches_nothing_is_a_one_line_error_with_example_names() -> None:
    model = tiny_model(VOCAB)
    with pytest.raises(UserError, match=r"trainer.freeze pattern 'encoder.layer.\*' matches no parameter; "
                       r"names look like encoder.embedding.weight, encoder.layers.0"):  # fmt: skip
        freeze_parameters(model, ["encoder.layers.0.*", "encoder.layer.*"])


def test_a_trainer_refuses_parameters_freeze_names_but_the_optimizer_trains(tmp_path: Path) -> None:
    trainer = frozen_trainer(tmp_path, [], max_updates=1)
    options = TrainerOptions(freeze=["encoder.layers.0.*"])
    parts = {
        name: getattr(trainer, name) for name in ("optimizer", "scheduler", "loss_fn", "batches", "reporter")
    }
    with pytest.raises(
        UserError, match=r"trainer.freeze names encoder.layers.0.*before building the optimizer"
    ):
        Trainer(model=trainer.model, **parts, make_batch=trainer.make_batch, validate=None,
                output_dir=tmp_path, checkpoint_extras={}, options=options,
                device=torch.device("cpu"))  # fmt: skip


def _rank(rank: int, world: int, store: str, out_dir: str) -> None:
    os.environ.update(WORLD_SIZE=str(world), RANK=str(rank))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store, world), rank=rank, world_size=world)
    trainer = frozen_trainer(Path(out_dir), FROZEN, max_updates=6, rank=rank, world=world)
    torch.manual_seed(1000 + rank)  # one dropout stream per rank, as the CLI seeds them
    trainer.fit()
    torch.save(trainer._unwrapped().state_dict(), Path(out_dir) / f"weights_{rank}.pt")
    dist.destroy_process_group()


@pytest.mark.slow
def test_frozen_parameters_under_distributed_data_parallel(tmp_path: Path) -> None:
    """Two gloo ranks, DDP without find_unused_parameters: the frozen tensors never move, the others do,
    and both ranks end with the same weights."""
    mp.spawn(_rank, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2, join=True)
    start = frozen_trainer(tmp_path / "start", FROZEN, max_updates=0)
    frozen = frozen_names(start.model)
    initial = start.model.state_dict()
    ranks = [torch.load(tmp_path / f"weights_{rank}.pt") for rank in (0, 1)]
    assert all(torch.equal(ranks[0][key], ranks[1][key]) for key in initial)
    assert all(torch.equal(ranks[0][name], initial[name]) for name in frozen)
    moved = [key for key in initial if not torch.equal(ranks[0][key], initial[key])]
    assert moved and not set(moved) & frozen

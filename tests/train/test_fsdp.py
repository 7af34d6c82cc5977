"""trainer.strategy=fsdp: FSDP2 shards, reduces gradients as DDP does (2 gloo ranks == 1 process on the
same global batch == ddp), writes whole weights that inference loads as any checkpoint, moves between
world sizes, and is built right for CUDA + bf16 (checked without a GPU)."""

from __future__ import annotations

import json
import logging
import os
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.distributed.device_mesh
import torch.distributed.fsdp
import torch.multiprocessing as mp
from hydra import compose, initialize_config_dir
from test_loop import FAMILIES, PAD, TOY_OPTIONS, toy_dataset
from tiny_models import TINY, tiny_tokenizer
from torch.distributed.fsdp import MixedPrecisionPolicy

from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.training_setup import seed_everything
from seq2seq.cli.qe_train import check_translation_only_settings
from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.collate import Batch, make_batch
from seq2seq.data.dataset import ParallelDataset
from seq2seq.errors import UserError
from seq2seq.model import build_encoder_only, build_model, model_size
from seq2seq.precision import autocast
from seq2seq.train import sharding
from seq2seq.train.loop import Trainer, TrainerOptions
from seq2seq.train.lora import add_adapters
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.objective import TrainingLoss
from seq2seq.train.optim import build_adamw
from seq2seq.train.reporting import Reporter
from seq2seq.train.schedules import ScheduledLR, noam
from seq2seq.train.sharding import DDP, FSDP

WORLD, UPDATES, SAVE_EVERY = 2, 3, 2
VOCAB = 64  # tiny_tokenizer's pieces, so that a checkpoint translates (the toy ids stay below 40)
BOS, EOS = 2, 3
# Two ranks against one process on the same global batch, after UPDATES AdamW updates: float rounding
# (summation order) only; Adam's eps keeps gradients that are zero up to rounding from becoming steps.
PARITY = {"rtol": 1e-4, "atol": 1e-5}
EPS = 1e-4
# One process resuming a two-rank checkpoint, one update on the same global batch: the same rounding.
CROSS_WORLD = 1e-5
# The 2-rank runs, as sharded_trainer's settings: fsdp with activation checkpointing, the decoder-only
# family, bf16 (its MixedPrecisionPolicy: bf16 weights and activations, fp32 reductions), guided alignment
# (its attending pass through a registered forward method) and LoRA (adapters sharded with their layers).
ALIGNMENT_HEAD = {"alignment_layer": 1, "alignment_head": 0}
LORA = {"rank": 4, "alpha": 8, "targets": ["qkv", "kv", "up"]}
RUNS = {"ddp": {"strategy": DDP},
        "fsdp": {"strategy": FSDP, "model": {"checkpoint_activations": True}},
        "fsdp_decoder_only": {"strategy": FSDP, "family": "decoder_only"},
        "fsdp_bf16": {"strategy": FSDP, "precision": "bf16"},
        "fsdp_guided": {"strategy": FSDP, "guided": True, "model": ALIGNMENT_HEAD},
        "fsdp_lora": {"strategy": FSDP, "lora": LORA}}  # fmt: skip
# Gradient norms of 2 ranks against 1 process: rounding in fp32; bf16 weights and activations move
# them by a few percent. A sum instead of an average doubles them.
NORMS = {"fp32": 1e-5, "bf16": 0.1}


def sharded_trainer(
    out_dir: Path, *, strategy: str, rank: int = 0, world: int = 1, family: str = "encoder_decoder",
    dropout: float = 0.0, tokenizer: bytes | None = None, model: dict[str, Any] | None = None,
    guided: bool = False, lora: dict[str, Any] | None = None, **options: Any,
) -> Trainer:  # fmt: skip
    """test_loop's toy run as seq2seq-train builds it for `strategy`: LoRA's adapters added, the model
    sharded (fsdp) before the optimizer or wrapped in DDP (several ranks), this rank's share of the
    batches, dropout seeded per rank; `guided`: every batch carries word links (target position t of a
    reversed copy to source position n - 1 - t) and the loss trains the alignment head; `options`:
    TrainerOptions fields over TOY_OPTIONS."""
    torch.manual_seed(0)
    dataset = toy_dataset()
    network = FAMILIES[family](VOCAB, pad_id=PAD, dropout=dropout, **(model or {}))
    if lora is not None:
        add_adapters(network, lora)
    if strategy == FSDP:
        network = sharding.fsdp_model(network, torch.device("cpu"), options.get("precision", "fp32"))
    optimizer = build_adamw(network, lr=0.0, eps=EPS)
    scheduler = ScheduledLR(optimizer, partial(noam, d_model=TINY["d_model"], warmup=4, scale=1.0))
    sampler = TokenBatchSampler(dataset.src_lengths, dataset.tgt_lengths, max_tokens=60, seed=3, rank=rank,
                                world_size=world)  # fmt: skip
    wrapped = torch.nn.parallel.DistributedDataParallel(network) if strategy == DDP and world > 1 else network
    token_loss = partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD)
    special = {"pad_id": PAD, "bos_id": BOS, "eos_id": EOS}
    trainer = Trainer(
        model=wrapped, optimizer=optimizer, scheduler=scheduler,
        loss_fn=TrainingLoss(token_loss, alignment_weight=0.5) if guided else token_loss, batches=sampler,
        make_batch=partial(linked_batch if guided else make_batch, dataset, **special),
        validate=None, reporter=Reporter(log_dir=None, progress_bar=False), output_dir=out_dir,
        checkpoint_extras={"model_config": network.config, "tokenizer": {"src": tokenizer, "tgt": None}},
        options=TrainerOptions(**{**TOY_OPTIONS, "strategy": strategy, "lora": lora, **options}),
        device=torch.device("cpu"),
    )  # fmt: skip
    seed_everything(1000 + rank)  # as the CLI does: one dropout stream per rank
    return trainer


def linked_batch(dataset: ParallelDataset, indices: list[int], **special: int) -> Batch:
    """make_batch's batch with Batch.alignment: each target token of a reversed copy linked to the
    source token it copies (rows (row, target position, source position), eos left unlinked)."""
    batch = make_batch(dataset, indices, **special)
    links = [(row, position, int(length) - 2 - position)
             for row, length in enumerate((batch.src != PAD).sum(dim=1).tolist())
             for position in range(int(length) - 1)]  # fmt: skip
    batch.alignment = torch.tensor(links, dtype=torch.int64)  # (L, 3)
    return batch


def join_gloo(rank: int, store: str) -> None:
    os.environ.update(WORLD_SIZE=str(WORLD), RANK=str(rank))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store, WORLD), rank=rank, world_size=WORLD)


def gradient_norms(trainer: Trainer) -> list[float]:
    """The gradient norm of each update (before clipping) as the trainer reports it: AdamW and clipping
    hide a gradient's scale from the weights, the norm shows it (a sum of 2 ranks would double it)."""
    norms: list[float] = []
    report = trainer.reporter.update

    def update(**record: Any) -> None:
        norms.append(record["grad_norm"])
        report(**record)

    trainer.reporter.update = update
    return norms


def leave_gloo() -> None:
    """Every rank's collectives done before the process group goes: a gloo group destroyed while its
    worker thread still finishes a collective's Python tensors can hang the process at exit (torch 2.13)."""
    dist.barrier()
    dist.destroy_process_group()


def _two_rank_runs(rank: int, store: str, out_dir: str, tokenizer: bytes) -> None:
    join_gloo(rank, store)
    for name, settings in RUNS.items():
        trainer = sharded_trainer(Path(out_dir) / name, rank=rank, world=WORLD, tokenizer=tokenizer,
                                  max_updates=UPDATES, save_every=SAVE_EVERY, **settings)  # fmt: skip
        norms = gradient_norms(trainer)
        trainer.fit()
        (Path(out_dir) / name / f"gradient_norms_{rank}.json").write_text(json.dumps(norms))
    leave_gloo()


@pytest.fixture(scope="module")
def two_rank_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RUNS trained on 2 gloo ranks for UPDATES updates (checkpoint_2.pt, last.pt at update 3)."""
    out_dir = tmp_path_factory.mktemp("two_ranks")
    tokenizer = tiny_tokenizer().to_bytes()
    mp.spawn(_two_rank_runs, args=(str(out_dir / "store"), str(out_dir), tokenizer), nprocs=WORLD, join=True)
    (out_dir / "tokenizer.bin").write_bytes(tokenizer)
    return out_dir


def one_process_run(tmp_path: Path, name: str) -> tuple[dict[str, torch.Tensor], list[float]]:
    """RUNS[name]'s UPDATES updates in one process and fp32, both ranks' batches in each (update_freq 2):
    the weights and the gradient norms."""
    settings = {key: value for key, value in RUNS[name].items() if key not in ("strategy", "precision")}
    trainer = sharded_trainer(tmp_path / name, strategy=DDP, max_updates=UPDATES, update_freq=2,
                              save_every=None, **settings)  # fmt: skip
    norms = gradient_norms(trainer)
    trainer.fit()
    return trainer.model.state_dict(), norms


def assert_close(got: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, **PARITY, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.slow
def test_two_ranks_equal_one_process_with_ddp_and_with_fsdp(two_rank_runs: Path, tmp_path: Path) -> None:
    """The reduction is an average for both strategies (a sum would double every gradient), fsdp with
    activation checkpointing, the decoder-only family, bf16, guided alignment and LoRA too; and fsdp
    agrees with ddp."""
    single = {name: one_process_run(tmp_path, name) for name in RUNS if name != "fsdp_bf16"}
    single["fsdp_bf16"] = single["ddp"]  # the same run in fp32
    for name, settings in RUNS.items():
        for rank in range(WORLD):
            norms = json.loads((two_rank_runs / name / f"gradient_norms_{rank}.json").read_text())
            tolerance = NORMS[settings.get("precision", "fp32")]
            torch.testing.assert_close(norms, single[name][1], rtol=tolerance, atol=0.0)
    saved = {name: load_checkpoint(two_rank_runs / name / "last.pt") for name in RUNS}
    assert all(payload["step"] == UPDATES for payload in saved.values())
    for name in ("ddp", "fsdp", "fsdp_decoder_only", "fsdp_guided"):
        assert_close(saved[name]["model"], single[name][0])
    assert_close(saved["fsdp"]["model"], saved["ddp"]["model"])
    assert all(value.dtype == torch.float32 for value in saved["fsdp_bf16"]["model"].values())  # fp32 kept
    moved = [name for name, value in single["ddp"][0].items()
             if not torch.equal(value, saved["ddp"]["model"][name])]  # fmt: skip
    assert moved, "the runs must differ in rounding at least, or the test compares nothing"
    _assert_lora_parity(saved["fsdp_lora"], single["fsdp_lora"][0], saved["ddp"]["model"])
    guided, plain = (single[name][1] for name in ("fsdp_guided", "fsdp"))
    assert guided != pytest.approx(plain, rel=1e-3), "the alignment term must reach the gradients"


def _assert_lora_parity(
    saved: dict[str, Any], single: dict[str, torch.Tensor], ddp: dict[str, torch.Tensor]
) -> None:
    """A 2-rank fsdp LoRA run's checkpoint against one process's LoRA run: the adapters trained alike (the
    process's state_dict names them inside their layers, <layer>.lora_a), every other weight untouched
    and under its ordinary name."""
    adapters = saved["lora"]["adapters"]
    assert adapters.keys() == {name for name in single if ".lora_" in name} and adapters
    assert_close(adapters, {name: single[name] for name in adapters})
    assert saved["model"].keys() == ddp.keys()
    assert all(torch.equal(value, single[name]) for name, value in saved["model"].items())


@pytest.mark.slow
def test_the_consolidated_checkpoint_is_an_ordinary_one(two_rank_runs: Path) -> None:
    """last.pt of an fsdp run holds the whole weights as a ddp run's does (tied ones one tensor), no
    optimizer state (that is in sharded/), and loads and translates as any checkpoint."""
    fsdp, ddp = (load_checkpoint(two_rank_runs / name / "last.pt") for name in ("fsdp", "ddp"))
    assert (
        "optimizer" not in fsdp and fsdp["strategy"] == FSDP and fsdp["sharded_state"].startswith("sharded/")
    )
    assert "strategy" not in ddp and "sharded_state" not in ddp
    assert fsdp["model"].keys() == ddp["model"].keys()
    assert all(
        value.shape == ddp["model"][name].shape and not value.is_cuda for name, value in fsdp["model"].items()
    )
    shared = [names for names in _tied_names(fsdp["model"]) if len(names) > 1]
    assert shared == [names for names in _tied_names(ddp["model"]) if len(names) > 1] and shared
    from seq2seq.inference.loading import load_for_inference  # here: the ranks spawned need none of it
    from seq2seq.inference.translator import Translator

    loaded = load_for_inference(two_rank_runs / "fsdp" / "last.pt", torch.device("cpu"))
    for name, value in loaded.model.state_dict().items():
        assert torch.equal(value, fsdp["model"][name]), name
    translator = Translator.from_checkpoint(two_rank_runs / "fsdp" / "last.pt", device="cpu", compile=False)
    assert len(translator.translate(["god created light"])) == 1


def _tied_names(state: dict[str, torch.Tensor]) -> list[list[str]]:
    groups: dict[int, list[str]] = {}
    for name, value in state.items():
        groups.setdefault(value.untyped_storage().data_ptr(), []).append(name)
    return sorted(groups.values())


@pytest.mark.slow
def test_one_process_resumes_a_two_rank_checkpoint(two_rank_runs: Path, tmp_path: Path, caplog) -> None:
    """checkpoint_2.pt of 2 ranks, read by 1 process: the weights exactly the saved ones (resharded by
    torch.distributed.checkpoint); update 3 on the same global batch (both ranks' batches) agrees with
    the 2-rank run's update 3 up to rounding (CROSS_WORLD, docs/training.md#fsdp)."""
    run = two_rank_runs / "fsdp"
    with caplog.at_level(logging.WARNING):
        trainer = sharded_trainer(tmp_path, strategy=FSDP, max_updates=UPDATES, update_freq=2,
                                  model=RUNS["fsdp"]["model"])  # fmt: skip
        trainer.resume_from(run / "checkpoint_2.pt")
    assert "nothing to shard" in caplog.text and "states for 2 rank(s), this run has 1" in caplog.text
    saved = load_checkpoint(run / "checkpoint_2.pt")["model"]
    assert all(torch.equal(value, saved[name]) for name, value in trainer.model.state_dict().items())
    trainer._update([trainer.make_batch(indices) for indices in trainer.batches.batches(0)[4:6]])
    expected = load_checkpoint(run / "last.pt")["model"]
    difference = max(
        float((value - expected[name]).abs().max()) for name, value in trainer.model.state_dict().items()
    )
    print(f"largest difference after one update on 1 rank vs 2 ranks: {difference:.3g}")
    assert difference <= CROSS_WORLD


def test_one_process_fsdp_warns_trains_whole_and_resumes_bitwise(tmp_path: Path, caplog) -> None:
    """With one process nothing is sharded (a warning), yet the checkpoints have fsdp's layout: a resume
    from last.pt is bitwise the uninterrupted run (dropout on: RNG restored), and sharded/ keeps
    only what a checkpoint names (an interrupted save's leftovers and rotated states are removed)."""
    settings = {"strategy": FSDP, "dropout": 0.3, "save_every": 2}
    with caplog.at_level(logging.WARNING, logger="seq2seq.train.sharding"):
        straight = sharded_trainer(tmp_path / "straight", max_updates=3, **settings)
    assert "nothing to shard" in caplog.text
    straight.fit()
    sharded_trainer(tmp_path / "resumed", max_updates=2, **settings).fit()  # stopped after update 2
    leftover = tmp_path / "resumed" / "sharded" / ".step_3.0badc0de.tmp"  # a save that never finished
    leftover.mkdir()
    (leftover / "__0_0.distcp").write_bytes(b"half")
    resumed = sharded_trainer(tmp_path / "resumed", max_updates=3, **settings)
    resumed.resume_from(tmp_path / "resumed" / "last.pt")
    resumed.fit()
    for name, value in straight.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[name]), name
    run = tmp_path / "resumed"
    named = {load_checkpoint(path)["sharded_state"] for path in run.glob("*.pt")}
    assert named == {f"sharded/{entry.name}" for entry in (run / "sharded").iterdir()}
    assert len(named) == 2  # checkpoint_2.pt's; last.pt and checkpoint_3.pt share update 3's
    assert all((run / name / "COMPLETE").is_file() for name in named)


def test_refusals_are_one_line(tmp_path: Path) -> None:
    messages = []
    for strategy, average_fraction in (("zero3", None), (FSDP, 0.2)):
        with pytest.raises(UserError) as refused:
            sharding.check_strategy(strategy, average_fraction=average_fraction)
        messages.append(str(refused.value))
    for written, resumed in ((DDP, FSDP), (FSDP, DDP)):
        sharded_trainer(tmp_path / written, strategy=written, max_updates=1).fit()
        with pytest.raises(UserError, match=f"trainer.strategy={written} run") as refused:
            sharded_trainer(tmp_path / "other", strategy=resumed, max_updates=2).resume_from(
                tmp_path / written / "last.pt"
            )
        messages.append(str(refused.value))
    for marker in (tmp_path / FSDP / "sharded").glob("*/COMPLETE"):
        marker.unlink()  # as if the save had stopped before its end
    with pytest.raises(UserError, match="missing, incomplete") as refused:
        sharded_trainer(tmp_path / "other", strategy=FSDP, max_updates=2).resume_from(
            tmp_path / FSDP / "last.pt"
        )
    messages.append(str(refused.value))
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        qe = compose("qe_train", overrides=["trainer.strategy=fsdp"])
    with pytest.raises(UserError, match=r"seq2seq-qe-train trains in one process: drop trainer\.strategy"):
        check_translation_only_settings(qe.trainer)
    assert all("\n" not in message for message in messages), messages


def _encoder_only(vocab: int) -> torch.nn.Module:
    return build_encoder_only(src_vocab_size=vocab, tgt_vocab_size=vocab, pad_id=PAD,
                              **model_size("encoder_only_tiny"))  # fmt: skip


def _imported(vocab: int) -> torch.nn.Module:
    """An NLLB-shaped model as seq2seq-import builds one from a transformers config (random weights)."""
    from transformers import M2M100Config

    from seq2seq.interop.huggingface_config import model_settings

    config = M2M100Config(vocab_size=vocab, d_model=16, encoder_layers=2, decoder_layers=3,
                          encoder_ffn_dim=32, decoder_ffn_dim=32, encoder_attention_heads=2,
                          decoder_attention_heads=2, decoder_start_token_id=2,
                          max_position_embeddings=64).to_dict()  # fmt: skip
    config["architectures"] = ["M2M100ForConditionalGeneration"]
    return build_model(**model_settings(config))


@pytest.mark.parametrize("family", ["encoder_decoder", "decoder_only", "encoder_only", "imported"])
def test_every_layer_of_every_family_is_a_sharding_unit(family: str) -> None:
    build = {**FAMILIES, "encoder_only": _encoder_only, "imported": _imported}[family]
    model = build(VOCAB) if family in ("encoder_only", "imported") else build(VOCAB, pad_id=PAD)
    units = sharding.sharding_units(model)
    stacks = [module for name, module in model.named_modules() if name.endswith("layers")]
    assert units and len(units) == sum(len(stack) for stack in stacks)
    assert all(isinstance(unit, sharding.SHARDING_UNITS) for unit in units)


class _Shards:
    """fully_shard and init_device_mesh as seen from outside: the calls, no collectives, no kernels."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def mesh(self, device_type: str, shape: tuple[int, ...]) -> str:
        self.calls.append(("mesh", device_type, shape))
        return "mesh"

    def fully_shard(self, module: torch.nn.Module, **settings: Any) -> Any:
        self.calls.append(("shard", type(module).__name__, settings))
        calls = self.calls

        class Unit:
            def set_force_sum_reduction_for_comms(self, enable: bool) -> None:
                calls.append(("sum", enable))

        return Unit()


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_cuda_runs_shard_on_a_cuda_mesh_with_the_precisions_policy(monkeypatch, precision: str) -> None:
    """The CUDA path by construction: the mesh on the GPUs, a unit per layer then the root, bf16
    parameters with fp32 reductions for bf16 (the dtype the trainer's autocast computes in) and no
    policy for fp32, every unit summing and dividing as DDP does."""
    shards = _Shards()
    monkeypatch.setattr(torch.distributed.device_mesh, "init_device_mesh", shards.mesh)
    monkeypatch.setattr(torch.distributed.fsdp, "fully_shard", shards.fully_shard)
    monkeypatch.setattr(sharding.distributed, "world_size", lambda: 2)
    from tiny_models import tiny_model

    model = tiny_model(VOCAB)
    sharding.fsdp_model(model, torch.device("cuda", 1), precision)
    layers = TINY["encoder_layers"] + TINY["decoder_layers"]
    assert shards.calls[0] == ("mesh", "cuda", (2,))
    sharded = [call for call in shards.calls if call[0] == "shard"]
    assert [call[1] for call in sharded] == ["EncoderLayer"] * TINY["encoder_layers"] + [
        "DecoderLayer"] * TINY["decoder_layers"] + ["Seq2Seq"]  # fmt: skip
    expected = {"mesh": "mesh"}
    if precision == "bf16":
        expected["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    assert all(call[2] == expected for call in sharded)
    assert [call for call in shards.calls if call[0] == "sum"] == [("sum", True)] * (layers + 1)
    if precision == "bf16":  # the trainer's autocast computes in the dtype the policy gathers in
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CUDA autocast without CUDA warns that it is off
            context = autocast(precision, torch.device("cuda", 1))
        assert context.device == "cuda" and context.fast_dtype == torch.bfloat16

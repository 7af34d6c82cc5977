"""An fsdp run's checkpoints: the training state in shards, the model whole, resumable on any world size.

Layout (run directory):

    last.pt, best.pt, checkpoint_N.pt   the usual files: the consolidated model weights (gathered on rank
                                        0's CPU), schedule, data position, every rank's RNG, counters,
                                        config, tokenizer, fingerprint; "strategy": "fsdp" and
                                        "sharded_state": the directory below; no "optimizer"
    sharded/step_N.<id>/                torch.distributed.checkpoint of the model shards and the optimizer
                                        state: each rank writes its own file, rank 0 the metadata, then
                                        COMPLETE (written last)

Every reader of a checkpoint as a model (translate, serve, export, average, init_from) reads the .pt
file as it reads any other. One save writes one directory, shared by the files written at that
update: first under a temporary name (sharded/.step_N.<id>.tmp/), then COMPLETE, then the rename, then
the .pt files that name it, atomically; afterwards every directory no checkpoint file names any more
(rotated away, left by an interrupted save) is deleted. So a half-written directory is never named by
a checkpoint file, and a checkpoint file never names a directory that is not whole.

Resume: the .pt file gives what the loop restores for any run (seq2seq.train.loop); the model and
optimizer state come from the sharded directory, resharded by torch.distributed.checkpoint to this
run's ranks: bitwise the saved state on any world size. On the same world size the continuation is
bitwise the uninterrupted run's; on another one each update's batch changes with the ranks
(trainer.max_tokens is per rank), the data restarts the epoch it was in, and ranks without a saved
RNG state start fresh ones (docs/training.md, FSDP).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from seq2seq.checkpoint import load_checkpoint, model_weights
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.model import build_from_config
from seq2seq.train import distributed
from seq2seq.train.lora import model_state
from seq2seq.train.sharding import DDP, FSDP, is_sharded

log = logging.getLogger(__name__)

DIRECTORY = "sharded"  # in the run directory
MARKER = "COMPLETE"  # written last into a sharded directory
STRATEGY_KEY = "strategy"  # in an fsdp run's .pt files; absent: a ddp run's (or one from before strategies)
SHARDED_KEY = "sharded_state"  # the sharded directory, relative to the .pt file's directory
CHECKPOINT_FILES = ("last.pt", "best.pt", "checkpoint_*.pt")  # those that may name a sharded directory


def saved_strategy(payload: dict[str, Any]) -> str:
    return str(payload.get(STRATEGY_KEY, DDP))


def check_resume_strategy(checkpoint: Path, payload: dict[str, Any], strategy: str) -> None:
    """A run resumes with the strategy its checkpoint was written with, and an fsdp checkpoint with its
    whole sharded directory; a one-line UserError otherwise."""
    saved = saved_strategy(payload)
    if saved != strategy:
        raise UserError(f"{checkpoint} was written by a trainer.strategy={saved} run and this one has "
                        f"trainer.strategy={strategy}; resume it with trainer.strategy={saved}")  # fmt: skip
    if saved == FSDP:
        sharded_directory(checkpoint, payload)


def consolidated(node: Any, weights: dict[str, Tensor]) -> Any:
    """`node` (a payload's part) with every DTensor replaced by the whole tensor of the same state-dict
    name in `weights`; other values as they are."""
    from torch.distributed.tensor import DTensor

    if isinstance(node, dict):
        return {key: weights[key] if isinstance(value, DTensor) else consolidated(value, weights)
                for key, value in node.items()}  # fmt: skip
    return node


@dataclass(frozen=True)
class SavedShards:
    """What one save wrote: the sharded directory (relative to the run directory) and, on rank 0 of a
    sharded model, the consolidated weights (None where the weights are whole already)."""

    name: str
    weights: dict[str, Tensor] | None

    def into(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The .pt files' payload: `payload` (Trainer.payload's) with the consolidated weights, without
        the optimizer state (which is in the sharded directory), with the strategy and the directory."""
        kept = {key: value for key, value in payload.items() if key != "optimizer"}
        if self.weights is not None:
            kept = consolidated(kept, self.weights)
        return {**kept, STRATEGY_KEY: FSDP, SHARDED_KEY: self.name}


class ShardedState:
    """The sharded training state of an fsdp run: saved, loaded, consolidated. Every method but
    `remove_unreferenced` is a collective: every rank calls it, at the same point."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, output_dir: Path,
                 device: torch.device) -> None:  # fmt: skip
        self.model, self.optimizer, self.device = model, optimizer, device
        self.output_dir = Path(output_dir)
        self._weights: tuple[int, dict[str, Tensor] | None] | None = None  # (step, rank 0's), once per step

    def full_weights(self, step: int) -> dict[str, Tensor] | None:
        """The consolidated weights (tied ones one tensor, as in the model) on rank 0's CPU, None on the
        other ranks and for a model that is whole already; gathered once for update `step`."""
        if not is_sharded(self.model):
            return None
        if self._weights is None or self._weights[0] != step:
            state_dicts = _checkpointing().state_dict
            options = state_dicts.StateDictOptions(full_state_dict=True, cpu_offload=True)
            weights = state_dicts.get_model_state_dict(self.model, options=options)
            self._weights = (step, _tied(weights, self.model) if distributed.is_main() else None)
        return self._weights[1]

    def evaluation_model(self, step: int) -> nn.Module | None:
        """The model as one process runs it, with the weights of update `step`: on rank 0 a whole copy
        built from the model's config (LoRA adapters merged), on `device`; None on the other ranks."""
        weights = self.full_weights(step)
        if weights is None:
            return self.model if not is_sharded(self.model) else None
        replica = build_from_config(self.model.config)
        replica.load_state_dict(model_weights(consolidated(model_state(self.model), weights)))
        trained = {name for name, p in self.model.named_parameters(remove_duplicate=False) if p.requires_grad}
        for name, parameter in replica.named_parameters(remove_duplicate=False):
            parameter.requires_grad_(name in trained)
        return replica.to(self.device)

    def save(self, step: int) -> SavedShards:
        """Write this rank's shards of the model and optimizer state into a new sharded directory
        (module docstring); on rank 0, what the .pt files then hold."""
        weights = self.full_weights(step)
        self._weights = None  # the copy is not kept between saves
        name = _agreed_name(step)
        temporary = self.output_dir / DIRECTORY / f".{Path(name).name}.tmp"
        if distributed.is_main():
            temporary.mkdir(parents=True)
        distributed.barrier()
        dcp = _checkpointing()
        model_state_dict, optimizer_state_dict = dcp.state_dict.get_state_dict(self.model, self.optimizer)
        with _single_process_quiet():
            dcp.save({"model": model_state_dict, "optimizer": optimizer_state_dict}, checkpoint_id=temporary)
        distributed.barrier()  # every rank's file is written before the marker says so
        if distributed.is_main():
            _complete(temporary, self.output_dir / name, step)
        return SavedShards(name, weights)

    def load(self, checkpoint: Path, payload: dict[str, Any]) -> None:
        """Restore the model and optimizer state of `checkpoint` (whose contents are `payload`, checked
        by check_resume_strategy) from its sharded directory, resharded to this run's ranks; what does
        not fit is a RuntimeError naming the first rank's problem."""
        directory = Path(checkpoint).parent / payload[SHARDED_KEY]
        self._weights = None
        dcp = _checkpointing()
        model_state_dict, optimizer_state_dict = dcp.state_dict.get_state_dict(self.model, self.optimizer)
        state = {"model": model_state_dict, "optimizer": optimizer_state_dict}
        try:
            with _single_process_quiet():
                dcp.load(state, checkpoint_id=directory)
        except dcp.CheckpointException as error:
            failure = next(iter(getattr(error, "failures", {}).values()), error)
            failure = failure[0] if isinstance(failure, tuple) else failure  # (exception, its traceback)
            raise RuntimeError((str(failure).strip().splitlines() or [type(failure).__name__])[0]) from None
        dcp.state_dict.set_state_dict(self.model, self.optimizer, model_state_dict=state["model"],
                                      optim_state_dict=state["optimizer"])  # fmt: skip
        log.info("model and optimizer state read from %s (written by %s rank(s), read by %d)", directory,
                 _marker(directory).get("world_size"), distributed.world_size())  # fmt: skip

    def remove_unreferenced(self) -> list[Path]:
        """Rank 0, after a save: delete the sharded directories (and unfinished ones) that no checkpoint
        file of the run directory names. Nothing is deleted if a checkpoint file cannot be read."""
        root = self.output_dir / DIRECTORY
        if not root.is_dir():
            return []
        files = sorted({path for pattern in CHECKPOINT_FILES for path in self.output_dir.glob(pattern)})
        try:
            named = {str(load_checkpoint(path, mmap=True).get(SHARDED_KEY)) for path in files}
        except UserError as error:
            log.warning("sharded directories kept: %s", error)
            return []
        doomed = [entry for entry in root.iterdir() if f"{DIRECTORY}/{entry.name}" not in named]
        for entry in doomed:
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        if doomed:
            log.info("removed %d sharded director%s no checkpoint names", len(doomed),
                     "y" if len(doomed) == 1 else "ies")  # fmt: skip
        return doomed


def _checkpointing() -> Any:
    """torch.distributed.checkpoint (and its state_dict helpers), imported when an fsdp run first needs
    it: imported by every run, it made two-rank ddp test processes hang at exit now and then (torch
    2.13, gloo; tests/train/test_distributed_resume.py)."""
    import torch.distributed.checkpoint as dcp
    import torch.distributed.checkpoint.state_dict  # noqa: F401  (dcp.state_dict)

    return dcp


def sharded_directory(checkpoint: Path, payload: dict[str, Any]) -> Path:
    """The complete sharded directory `checkpoint` names, or a one-line UserError."""
    name = payload.get(SHARDED_KEY)
    if not isinstance(name, str):
        raise UserError(f"{checkpoint} names no sharded state (no {SHARDED_KEY!r}); it is damaged, resume "
                        "from another checkpoint of the run")  # fmt: skip
    directory = Path(checkpoint).parent / name
    marker = _marker(directory)
    if marker.get("step") != payload.get("step"):
        raise UserError(f"{checkpoint} needs its sharded state {directory}, which is missing, incomplete or "
                        "of another update; resume from another checkpoint of the run")  # fmt: skip
    return directory


def _marker(directory: Path) -> dict[str, Any]:
    try:
        return json.loads((directory / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _agreed_name(step: int) -> str:
    """sharded/step_N.<id>: a new name for every save (rank 0's id, the same on every rank)."""
    token = [uuid.uuid4().hex[:8] if distributed.is_main() else None]
    if dist.is_initialized():
        dist.broadcast_object_list(token, src=0)
    return f"{DIRECTORY}/step_{step}.{token[0]}"


def _complete(temporary: Path, final: Path, step: int) -> None:
    """Rank 0: the marker, written last into the whole directory, then the directory's final name."""
    with atomic_output(temporary / MARKER, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"step": step, "world_size": distributed.world_size(), "strategy": FSDP}))
    os.replace(temporary, final)
    try:
        fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # not every platform opens directories
        pass


def _tied(weights: dict[str, Tensor], model: nn.Module) -> dict[str, Tensor]:
    """`weights` with the names of one shared parameter (tied embeddings) holding one tensor, as the
    model's own state_dict does, so the file is the size and shape of a ddp run's."""
    names: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), []).append(name)
    tied = dict(weights)
    for group in (group for group in names.values() if len(group) > 1):
        first = next((name for name in group if name in tied), None)
        for name in group if first is not None else ():
            tied[name] = tied[first]
    return tied


@contextmanager
def _single_process_quiet() -> Iterator[None]:
    """torch.distributed.checkpoint warns that it works "in a single process" without a process group:
    with one process that is the intent, so the warning is silenced there (and only there)."""
    with warnings.catch_warnings():
        if not dist.is_initialized():
            warnings.filterwarnings("ignore", message=".*single process.*")
        yield

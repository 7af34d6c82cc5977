"""The training loop: updates, stopping rules, validation, checkpoints and exact resumption.

No Hydra here: the CLI builds every part and hands it over. The loop owns the order of things:
one update = `update_freq` token-budget batches whose summed loss is divided by the number of
target tokens in all of them (on all ranks), then clip, skip if non-finite, step, schedule. After
each update the ranks agree, in one all-reduce, whether to validate and whether to stop.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from seq2seq.checkpoint import (
    FORMAT_VERSION,
    load_checkpoint,
    remove_stale_temporaries,
    rotate_checkpoints,
    save_checkpoint,
)
from seq2seq.errors import UserError
from seq2seq.precision import autocast, resolve_precision
from seq2seq.train import distributed
from seq2seq.train.freezing import check_frozen
from seq2seq.train.lora import check_adapters, load_model_state, model_state
from seq2seq.train.objective import batch_loss
from seq2seq.train.optim import clip_gradients
from seq2seq.train.rng import restore_rng, rng_state
from seq2seq.train.sharded_checkpoint import ShardedState, check_resume_strategy
from seq2seq.train.sharding import FSDP

log = logging.getLogger(__name__)


@dataclass
class TrainerOptions:
    """Explicit settings of the loop; the CLI fills them from the `trainer` config group, whose file
    (configs/trainer/default.yaml) explains each. The defaults equal that file's (a test checks)."""

    max_updates: int = 100000
    max_epochs: int = 1000
    max_minutes: float | None = None
    update_freq: int = 1
    clip_norm: float | None = 1.0
    precision: str = "auto"
    validate_every: int | None = None
    validate_every_minutes: float | None = 5.0
    early_stop_patience: int | None = None
    save_every: int | None = 1000
    keep_last: int = 5
    log_every: int = 50
    max_consecutive_nonfinite: int = 10
    freeze: list[str] | None = None  # name patterns of parameters frozen before the optimizer is built
    # trainer.lora: low-rank adapters trained in place of the weights (train/lora.py), a mapping or None;
    # typed Any because Hydra cannot merge a mapping into a null node typed as an optional dict
    lora: Any = None
    strategy: str = "ddp"  # how the ranks hold the model: ddp | fsdp (train/sharding.py)


def run_precision(options: TrainerOptions, device: torch.device) -> str:
    """trainer.precision as the run computes in it on `device` (auto resolved, as the Trainer does), for
    what is built before the Trainer: an fsdp run's mixed-precision policy (train/sharding.py)."""
    return resolve_precision(options.precision, device)


@dataclass
class TrainState:
    """Counters that survive a resume."""

    step: int = 0
    epoch: int = 0
    elapsed_seconds: float = 0.0
    best_bleu: float | None = None
    best_loss: float | None = None
    validations_without_improvement: int = 0
    nonfinite_skipped: int = 0
    history: list[dict[str, float]] = field(default_factory=list)


class Trainer:
    """Runs updates until a stopping rule fires; everything it needs is passed in."""

    def __init__(
        self,
        *,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: Any,
        loss_fn: Callable[..., Any],
        batches: Any,
        make_batch: Callable[[list[int]], Any],
        validate: Callable[[nn.Module, int], dict[str, Any]] | None,
        reporter: Any,
        output_dir: Path,
        checkpoint_extras: dict[str, Any],
        options: TrainerOptions,
        device: torch.device,
        on_update: Callable[[nn.Module, int], None] | None = None,
        objective: Callable[..., Any] = batch_loss,
    ) -> None:
        """`on_update(model, step)` runs after every update (e.g. weights-only snapshots for averaging);
        `objective(model, batch, loss_fn, pad_id=...)` gives a batch's LossOutput (a translation model's
        by default; seq2seq.qe.training.qe_batch_loss for a QE model). Parameters `options.freeze` names
        must be frozen already (seq2seq.train.freezing.freeze_parameters, before the optimizer)."""
        check_frozen(distributed.unwrapped(model), optimizer, options.freeze)
        check_adapters(distributed.unwrapped(model), options.lora)  # added before the optimizer was built
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.loss_fn = loss_fn
        self.batches = batches
        self.make_batch = make_batch
        self.validate_fn = validate
        self.reporter = reporter
        self.output_dir = Path(output_dir)
        self.extras = checkpoint_extras
        self.options = options
        self.device, self.on_update, self.objective = device, on_update, objective
        self.precision = resolve_precision(options.precision, device)  # auto: the one place it is chosen
        # fsdp: the model and optimizer state in shards on disk, the weights gathered to save and validate
        fsdp = options.strategy == FSDP
        self.sharded = ShardedState(model, optimizer, output_dir, device) if fsdp else None
        self.state = TrainState()
        self.started_at = time.time()  # temporaries older than this are leftovers of an interrupted run
        self.stop_requested: str | None = None  # why the run stopped, as every rank agreed
        self._signal_received: int | None = None  # SIGINT/SIGTERM seen by this rank, not yet agreed on
        self._consecutive_nonfinite = 0

    # ------------------------------------------------------------------ public
    def fit(self) -> TrainState:
        """Train until max_updates / max_epochs / max_minutes / early stopping / a signal."""
        options = self.options
        _, finished = self._agreed_decision(validation_due=False)
        if finished:  # e.g. re-running a command whose run already completed
            log.info("nothing to do: the run already stopped at update %d (%s)", self.state.step, finished)
            self.stop_requested = finished
            return self.state
        if distributed.is_main():
            remove_stale_temporaries(self.output_dir, older_than=self.started_at)
        previous_handlers = self._install_signal_handlers()
        start = time.monotonic() - self.state.elapsed_seconds
        last_validation_time = time.monotonic()
        self.reporter.start(total_updates=options.max_updates, initial=self.state.step)
        try:
            for group in self._update_groups():
                self._update(group)
                self.state.elapsed_seconds = time.monotonic() - start
                if self.on_update is not None:
                    self.on_update(self._unwrapped(), self.state.step)
                step = self.state.step
                minutes_since = (time.monotonic() - last_validation_time) / 60
                validate, stop = self._agreed_decision(self._validation_due(step, minutes_since))
                if validate:
                    self._validate_and_save()
                    last_validation_time = time.monotonic()
                    # This validation may be the patience-th without a gain: stop now, not one later.
                    stop = stop or self._agreed_decision(validation_due=False)[1]
                elif options.save_every and step % options.save_every == 0:
                    self._save(numbered=True)
                if stop:
                    self.stop_requested = stop
                    log.info("stopping at update %d: %s", step, stop)
                    break
            if self.stopping_signal is not None:
                self._save(numbered=False)
                log.info(
                    "stopped by %s at update %d; saved last.pt; run the same command to resume",
                    self.stop_requested,
                    self.state.step,
                )
            elif not self.state.history or self.state.history[-1]["step"] != self.state.step:
                self._validate_and_save()
        finally:
            self.reporter.close()
            self._restore_signal_handlers(previous_handlers)
        return self.state

    # ------------------------------------------------------------------ batches and updates
    def _update_groups(self) -> Iterator[list[Any]]:
        """Yield lists of `update_freq` batches, epoch after epoch, from the sampler's saved position."""
        group: list[Any] = []
        while self.state.epoch < self.options.max_epochs:
            self.batches.set_epoch(self.state.epoch)
            for indices in self.batches:
                group.append(self.make_batch(indices))
                if len(group) == self.options.update_freq:
                    yield group
                    group = []
            self.state.epoch += 1
            self.batches.set_epoch(self.state.epoch)
        self.stop_requested = self.stop_requested or "max_epochs"

    def _update(self, group: list[Any]) -> None:
        model, options = self.model, self.options
        model.train()
        local_tokens = sum(batch.n_tgt_tokens for batch in group)
        total_tokens = distributed.all_reduce_sum(float(local_tokens), self.device)
        scale = distributed.world_size() / max(total_tokens, 1.0)  # DDP averages over ranks
        loss_sum = nll_sum = 0.0
        start = time.perf_counter()
        for index, batch in enumerate(group):
            batch = batch.to(self.device)
            sync = index == len(group) - 1
            with (
                nullcontext() if sync or not isinstance(model, DistributedDataParallel) else model.no_sync(),
                autocast(self.precision, self.device),
            ):
                out = self.objective(model, batch, self.loss_fn, pad_id=self._unwrapped().pad_id)
            (out.loss_sum * scale).backward()
            loss_sum += float(out.loss_sum.detach())
            nll_sum += float(out.nll_sum)
        grad_norm = clip_gradients(model.parameters(), options.clip_norm)
        # Decided on every rank's loss (gradients are already summed): ranks never disagree on a skip.
        global_loss = (
            distributed.all_reduce_sum(loss_sum, self.device) if distributed.world_size() > 1 else loss_sum
        )
        finite = math.isfinite(global_loss) and math.isfinite(grad_norm)
        lr = self.scheduler.get_last_lr()[0]  # this update's; scheduler.step() sets the next one's
        if finite:
            self.optimizer.step()
            self.scheduler.step()
            self._consecutive_nonfinite = 0
        else:
            self._skip_nonfinite(loss_sum, grad_norm)
        self.optimizer.zero_grad(set_to_none=True)
        self.state.step += 1
        self.reporter.update(
            step=self.state.step,
            loss=loss_sum / max(local_tokens, 1),
            nll=nll_sum / max(local_tokens, 1),
            lr=lr,
            grad_norm=grad_norm,
            tokens=local_tokens,
            seconds=time.perf_counter() - start,
            log_now=self.state.step % options.log_every == 0,
        )

    def _skip_nonfinite(self, loss_sum: float, grad_norm: float) -> None:
        self._consecutive_nonfinite += 1
        self.state.nonfinite_skipped += 1
        log.warning(
            "update %d skipped: non-finite loss (%s) or gradient norm (%s); %d skipped so far",
            self.state.step + 1,
            loss_sum,
            grad_norm,
            self.state.nonfinite_skipped,
        )
        if self._consecutive_nonfinite >= self.options.max_consecutive_nonfinite:
            self._save(numbered=False)
            raise UserError(
                f"training diverged: {self._consecutive_nonfinite} consecutive non-finite losses/gradients "
                f"up to update {self.state.step + 1}; lower the learning rate, use fp32, or check the data"
            )

    # ------------------------------------------------------------------ stopping and validation
    def _validation_due(self, step: int, minutes_since: float) -> bool:
        every, every_minutes = self.options.validate_every, self.options.validate_every_minutes
        return bool((every and step % every == 0) or (every_minutes and minutes_since >= every_minutes))

    def _agreed_decision(self, validation_due: bool) -> tuple[bool, str | None]:
        """(validate now?, the reason to stop after this update or None), the same on every rank.

        Each rank has its own clock and receives its own signals, and only rank 0 validates (and so
        counts validations without improvement); one all-reduce of every rank's requests makes a
        request of any rank hold for all, so no rank leaves the loop while another waits for it.
        """
        options, state = self.options, self.state
        patience = options.early_stop_patience
        time_up = options.max_minutes is not None and state.elapsed_seconds >= 60 * options.max_minutes
        requests = [
            int(validation_due),
            int(self._signal_received or 0),
            int(state.step >= options.max_updates),
            int(time_up),
            int(patience is not None and state.validations_without_improvement >= patience),
        ]
        due, signum, updates_done, minutes_done, impatient = distributed.agree(requests, self.device)
        reason = None
        if signum:  # first: the exit status must say the run was interrupted
            reason = f"signal {signal.Signals(signum).name}"
        elif updates_done:
            reason = "max_updates"
        elif minutes_done:
            reason = "max_minutes"
        elif impatient:
            reason = f"no dev BLEU (or, without BLEU, dev loss) improvement in {patience} validations"
        return bool(due), reason

    def validate_start(self) -> None:
        """Validate the model before update 1 (a fine-tuning run's starting point): logged, in TensorBoard
        and in the history at update 0; a baseline, not a candidate: best.pt and early stopping follow
        the updates' validations only. Call it before fit(), never on a resumed run."""
        if self.state.step or self.state.history:
            raise RuntimeError("validate_start() is for a run that has not started")
        self._validated(candidate=False)

    def _validated(self, *, candidate: bool) -> bool:
        """Validate (on the main process), append the history record and report it; a `candidate` for
        best.pt and early stopping is counted. Returns whether it is a new best."""
        metrics: dict[str, Any] = {}
        evaluated = self.evaluation_model()  # with fsdp, a gather on every rank
        if self.validate_fn is not None and distributed.is_main():
            metrics = self.validate_fn(evaluated, self.state.step)
        record = {"step": self.state.step, "minutes": self.state.elapsed_seconds / 60}
        record.update({k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))})
        self.state.history.append(record)
        improved = candidate and self._record_best(record.get("bleu"), record.get("loss"))
        best = self.state.best_bleu if candidate else None  # the starting point's is no best
        self.reporter.validation(self.state.step, metrics, best_bleu=best)
        return improved

    def _validate_and_save(self) -> None:
        improved = self._validated(candidate=True)
        self._save(numbered=bool(self.options.save_every), best=improved)

    def _record_best(self, bleu: float | None, loss: float | None) -> bool:
        """best.pt follows dev BLEU; runs that validate without BLEU fall back to dev loss."""
        state = self.state
        if bleu is not None:
            improved = state.best_bleu is None or bleu > state.best_bleu
            state.best_bleu = bleu if improved else state.best_bleu
        elif loss is not None:
            improved = state.best_loss is None or loss < state.best_loss
        else:
            return False
        if loss is not None and (state.best_loss is None or loss < state.best_loss):
            state.best_loss = loss
        state.validations_without_improvement = 0 if improved else state.validations_without_improvement + 1
        return improved

    # ------------------------------------------------------------------ checkpoints
    def _unwrapped(self) -> nn.Module:
        return distributed.unwrapped(self.model)

    def evaluation_model(self) -> nn.Module | None:
        """The model with its current weights as one process runs it (validation, the end of a run). With
        fsdp every rank must call it (a gather): rank 0 gets a whole copy, the others None."""
        return self._unwrapped() if self.sharded is None else self.sharded.evaluation_model(self.state.step)

    def payload(self) -> dict[str, Any]:
        state = self.state
        return {
            "format_version": FORMAT_VERSION,
            **model_state(self._unwrapped(), self.options.lora),  # "model", and a LoRA run's "lora"
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "batches": self.batches.state_dict(),
            "rng": rng_state(),  # this rank's (rank 0's in the file); every rank's in "rng_per_rank"
            "step": state.step,
            "train_state": {
                "epoch": state.epoch,
                "elapsed_seconds": state.elapsed_seconds,
                "best_bleu": state.best_bleu,
                "best_loss": state.best_loss,
                "validations_without_improvement": state.validations_without_improvement,
                "nonfinite_skipped": state.nonfinite_skipped,
                "history": state.history,
            },
            **self.extras,
        }

    def _save(self, *, numbered: bool, best: bool = False) -> None:
        """Every rank calls this (its RNG state goes into the file); rank 0 writes."""
        per_rank = distributed.gather_objects(rng_state())
        shards = None if self.sharded is None else self.sharded.save(self.state.step)  # every rank's part
        if not distributed.is_main():
            return
        payload = {**self.payload(), "rng_per_rank": per_rank}
        payload = payload if shards is None else shards.into(payload)  # whole weights, sharded optimizer
        self.output_dir.mkdir(parents=True, exist_ok=True)
        save_checkpoint(self.output_dir / "last.pt", payload)
        if numbered:
            save_checkpoint(self.output_dir / f"checkpoint_{self.state.step}.pt", payload)
            rotate_checkpoints(
                self.output_dir,
                "checkpoint_{step}.pt",
                keep=self.options.keep_last,
                newest_step=self.state.step,
            )
        if best:
            save_checkpoint(self.output_dir / "best.pt", payload)
        if self.sharded is not None:
            self.sharded.remove_unreferenced()
        log.info("saved checkpoint at update %d%s", self.state.step, " (new best)" if best else "")

    def resume_from(self, path: Path, payload: dict[str, Any] | None = None) -> None:
        """Restore everything a checkpoint holds, so training continues as if never stopped; `payload`:
        the file's contents when the caller has read them already (they are not read twice)."""
        payload = load_checkpoint(path, map_location=self.device) if payload is None else payload
        check_resume_strategy(path, payload, self.options.strategy)
        try:
            if self.sharded is not None:  # every rank reads its shards of the model and optimizer state
                self.sharded.load(path, payload)
            else:
                load_model_state(self._unwrapped(), payload, self.options.lora)
                self.optimizer.load_state_dict(payload["optimizer"])
        except (RuntimeError, KeyError, ValueError) as error:
            first_line = str(error).strip().splitlines()[0]
            raise UserError(
                f"checkpoint {path} does not fit this model/optimizer ({first_line}); "
                "use the settings it was trained with, or a new run_name"
            ) from None
        self.scheduler.load_state_dict(payload["scheduler"])
        self.batches.load_state_dict(payload["batches"])
        saved = payload["train_state"]
        self.state = TrainState(step=int(payload["step"]), **saved)
        restore_rng(payload)
        log.info(
            "resumed from %s at update %d (epoch %d, %.1f minutes trained)",
            path,
            self.state.step,
            self.state.epoch,
            self.state.elapsed_seconds / 60,
        )

    # ------------------------------------------------------------------ signals
    @property
    def stopping_signal(self) -> signal.Signals | None:
        """SIGINT or SIGTERM when one stopped the run before its end, else None."""
        if self.stop_requested and self.stop_requested.startswith("signal "):
            return signal.Signals[self.stop_requested.removeprefix("signal ")]
        return None

    def _install_signal_handlers(self) -> dict[int, Any]:
        previous: dict[int, Any] = {}

        def request_stop(signum: int, _frame: Any) -> None:
            self._signal_received = signum  # acted on after this update, when the ranks agree

        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[signum] = signal.signal(signum, request_stop)
            except ValueError:  # not the main thread
                pass
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict[int, Any]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

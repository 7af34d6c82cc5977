"""The end of a training run, after the last update: average, choose the checkpoint to translate, tune its
decoding settings. Rank 0 only, and not after a signal (the run is not over: resuming finishes it).

1. Averaging (`trainer.average_last` or `trainer.average_fraction`) writes averaged.pt and scores it on
   the whole dev set with the validation search (greedy by default).
2. The final choice: best.pt is scored the same way, and the one with the higher dev BLEU (dev loss
   without BLEU; the average on a tie) is the checkpoint to translate. Averaging usually gains, but not
   in a short run that is still improving fast, where the newest weights are the best ones. Its BLEU is
   what the run returns, so a sweep optimises the model that will be used.
3. `trainer.tune_decoding`: the chosen checkpoint (best.pt without averaging) gets decoding settings of
   its own, its tuned decoding (seq2seq.train.tune_decoding), stored in the file under `tuned_decoding`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY
from seq2seq.errors import UserError
from seq2seq.train.averaging import (
    average_and_validate,
    average_paths_and_validate,
    score_final_weights,
    scored,
)
from seq2seq.train.lora import load_merged_weights
from seq2seq.train.snapshots import SnapshotPolicy, Snapshots
from seq2seq.train.tune_decoding import describe, tune_decoding
from seq2seq.train.validation import Validator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinishSettings:
    """The `trainer` keys of the end of a run; the defaults equal configs/trainer/default.yaml's."""

    average_last: int | None = None
    average_fraction: float | None = None
    snapshot_every: int = 25
    max_snapshots: int = 16
    tune_decoding: bool = False
    tune_decoding_sentences: int | None = 500

    @classmethod
    def from_config(cls, trainer: Mapping[str, Any]) -> FinishSettings:
        return cls(**{field.name: trainer[field.name] for field in dataclasses.fields(cls)})

    @property
    def snapshots(self) -> SnapshotPolicy | None:
        """What `trainer.average_fraction` needs written during the run (None without it)."""
        if self.average_fraction is None:
            return None
        return SnapshotPolicy(self.average_fraction, self.snapshot_every, self.max_snapshots)

    def check(self, trainer: Mapping[str, Any]) -> None:
        """One-line errors for settings that cannot work, before any training work."""
        if self.average_last is not None and self.average_fraction is not None:
            raise UserError(
                f"trainer.average_last={self.average_last} and trainer.average_fraction="
                f"{self.average_fraction} are two ways to average; set one, the other null"
            )
        if self.average_last is not None:
            _check_average_last(self.average_last, trainer)
        if self.snapshots is not None:
            self.snapshots.check()
        if self.tune_decoding and not trainer["validate_bleu"]:
            raise UserError(
                "trainer.tune_decoding=true chooses decoding settings by dev BLEU, but "
                "trainer.validate_bleu=false; set trainer.validate_bleu=true"
            )
        sentences = self.tune_decoding_sentences
        if self.tune_decoding and sentences is not None and sentences < 1:
            raise UserError(
                f"trainer.tune_decoding_sentences={sentences} must be at least 1 (null: the whole dev set)"
            )


def _check_average_last(last: int, trainer: Mapping[str, Any]) -> None:
    """trainer.average_last needs numbered checkpoints, and at least as many kept as it averages."""
    if last < 2:
        raise UserError(f"trainer.average_last={last} must be at least 2 (or null: no averaging)")
    if not trainer["save_every"]:
        raise UserError(
            f"trainer.average_last={last} averages numbered checkpoints but trainer.save_every is null; "
            "set trainer.save_every (e.g. 150)"
        )
    if trainer["keep_last"] < last:
        raise UserError(
            f"trainer.average_last={last} but trainer.keep_last={trainer['keep_last']} keeps fewer "
            f"checkpoints; set trainer.keep_last={last} or more"
        )


def finish_run(
    run_dir: Path,
    model: nn.Module,
    validator: Validator,
    settings: FinishSettings,
    *,
    step: int,
    dev_pairs: tuple[int, int] | None,
) -> dict[str, Any]:
    """Average, choose, tune (module docstring); returns summary.json's `averaged`, `final`, `decoding`
    and `finish_seconds`. `model` holds the final weights on entry and anything on return."""
    start = time.perf_counter()
    averaged = _average(run_dir, model, validator, settings, step=step, dev_pairs=dev_pairs)
    final = None
    if averaged is not None:
        final = choose_final(run_dir, model, validator, averaged, dev_pairs=dev_pairs)
    decoding = None
    if settings.tune_decoding:
        target = Path(final["checkpoint"]) if final else _best_or_last(run_dir)
        decoding = tune_and_store(target, model, validator, sentences=settings.tune_decoding_sentences)
    seconds = time.perf_counter() - start
    if averaged is not None or decoding is not None:
        log.info("end of run: %.1f s (averaging, choosing and tuning after the last update)", seconds)
    return {"averaged": averaged, "final": final, "decoding": decoding, "finish_seconds": seconds}


def objective(finished: Mapping[str, Any], best_bleu: float | None) -> float | None:
    """What the run returns to a sweeper: the final choice's whole-dev-set BLEU, else the best
    validation's."""
    bleu = (finished.get("final") or {}).get("bleu")
    return best_bleu if bleu is None else bleu


def _average(
    run_dir: Path, model: nn.Module, validate: Callable[..., dict[str, Any]], settings: FinishSettings,
    *, step: int, dev_pairs: tuple[int, int] | None,
) -> dict[str, Any] | None:  # fmt: skip
    """averaged.pt's record (or last.pt's, when too few weights were kept to average); None: no averaging."""
    if settings.average_last is not None:
        return average_and_validate(run_dir, model, validate, last=settings.average_last, step=step,
                                    dev_pairs=dev_pairs)  # fmt: skip
    policy = settings.snapshots
    if policy is None:
        return None
    snapshots = Snapshots(run_dir, policy)
    steps = [s for s in snapshots.for_average(step) if s < step]  # last.pt holds the weights of `step`
    if not steps:
        return score_final_weights(
            run_dir, model, validate, step=step, dev_pairs=dev_pairs,
            setting=f"trainer.average_fraction={policy.fraction}",
            found=f"no snapshot in the last {step - policy.window_start(step)} updates",
            hint="lower trainer.snapshot_every to average",
        )  # fmt: skip
    paths = [snapshots.path(s) for s in steps] + [run_dir / "last.pt"]
    return average_paths_and_validate(run_dir, model, validate, paths, [*steps, step], dev_pairs=dev_pairs)


def choose_final(
    run_dir: Path,
    model: nn.Module,
    validate: Callable[..., dict[str, Any]],
    averaged: dict[str, Any],
    *,
    dev_pairs: tuple[int, int] | None,
) -> dict[str, Any]:
    """The checkpoint to translate: the average (or last.pt) or best.pt, whichever scores higher on the
    whole dev set with the same search; both scores are kept."""
    start = time.perf_counter()
    candidates = {Path(averaged["checkpoint"]).name: averaged}
    best = run_dir / "best.pt"
    if best.is_file():
        payload = load_checkpoint(best)
        step = int(payload.get("step", -1))
        if not averaged["averaged"] and step == averaged["steps"][-1]:  # last.pt's weights: scored already
            candidates["best.pt"] = {**averaged, "checkpoint": str(best)}
        else:
            load_merged_weights(model, payload)
            candidates["best.pt"] = scored(model, validate, [step], best, averaged=False, dev_pairs=dev_pairs)
    merit = {name: record.get("bleu", -record["loss"]) for name, record in candidates.items()}
    winner = max(merit, key=merit.__getitem__)  # the first on a tie: the average
    chosen = candidates[winner]
    rule = "higher whole-dev-set BLEU" if "bleu" in chosen else "lower whole-dev-set loss (no BLEU)"
    scores = ", ".join(f"{name} {merit[name] if 'bleu' in chosen else -merit[name]:.2f}" for name in merit)
    log.info("final checkpoint: %s, by its %s (%s)", winner, rule, scores)
    return {
        "checkpoint": chosen["checkpoint"], "bleu": chosen.get("bleu"), "loss": chosen["loss"], "rule": rule,
        "candidates": candidates, "seconds": time.perf_counter() - start,
    }  # fmt: skip


def tune_and_store(
    checkpoint: Path, model: nn.Module, validator: Validator, *, sentences: int | None
) -> dict[str, Any]:
    """Tune the decoding settings of `checkpoint`'s weights and store them in it (rewritten atomically)."""
    payload = load_checkpoint(checkpoint)
    load_merged_weights(model, payload)
    record = {**tune_decoding(model, validator, sentences=sentences), "step": int(payload.get("step", 0))}
    save_checkpoint(checkpoint, {**payload, PAYLOAD_KEY: record})
    log.info("%s", describe(record, checkpoint.name))
    return {**record, "checkpoint": str(checkpoint)}


def _best_or_last(run_dir: Path) -> Path:
    best = run_dir / "best.pt"
    return best if best.is_file() else run_dir / "last.pt"

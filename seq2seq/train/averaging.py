"""Checkpoint averaging: the mean of the model weights of several checkpoints.

Averaging the final checkpoints of a run (Vaswani et al., 2017) usually gains a little BLEU for
free. The result keeps everything else from the newest input (model_config, config, tokenizer,
step...) except optimizer, scheduler and grad-scaler state: those describe the newest weights,
not the average, and would only make the file larger. Weights shared inside a checkpoint (tied
embeddings) stay shared in the result. The inputs must hold one model: one family, the same parameters
and shapes, the same model settings (those in HOW_IT_RUNS may differ). A LoRA run's checkpoint is
merged first (seq2seq.checkpoint.model_weights), so the mean is of the models translated with and the
result an ordinary checkpoint, without adapters. Used by seq2seq-average and by
seq2seq-train's `trainer.average_last` and `trainer.average_fraction` (seq2seq.train.finish), which
score the average on the whole dev set (or, with fewer than two checkpoints, the final weights: one
metric either way).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from seq2seq.checkpoint import LORA_KEY, load_checkpoint, model_weights, save_checkpoint
from seq2seq.errors import UserError
from seq2seq.model import family_of
from seq2seq.train.lora import load_merged_weights

log = logging.getLogger(__name__)

NUMBERED = re.compile(r"checkpoint_(\d+)\.pt")
# sharded_state: where an fsdp run keeps its optimizer state (seq2seq.train.sharded_checkpoint)
TRAINING_STATE_KEYS = ("optimizer", "scheduler", "scaler", "grad_scaler", "sharded_state")
# Model settings that leave what the weights compute unchanged: checkpoints may differ in these only.
HOW_IT_RUNS = (
    "attention_backend",
    "checkpoint_activations",
    "dropout",
    "attention_dropout",
    "activation_dropout",
)


def find_checkpoints(inputs: Sequence[Path], last: int | None) -> list[Path]:
    """The checkpoints to average, oldest first.

    One directory: its checkpoint_{step}.pt files by step (as numbers). Files: as given, or by step
    when every name is numbered. `last` keeps only the newest N.
    """
    if last is not None and last < 1:
        raise UserError(f"--last {last} must be at least 1")
    if len(inputs) == 1 and inputs[0].is_dir():
        paths = numbered_checkpoints(inputs[0])
        if not paths:
            raise UserError(
                f"{inputs[0]} holds no checkpoint_{{step}}.pt files; pass the run's checkpoint directory"
            )
        if last is not None and last > len(paths):
            raise UserError(
                f"--last {last} but {inputs[0]} has only {len(paths)} numbered checkpoints; "
                f"pass --last {len(paths)} or fewer"
            )
    else:
        for path in inputs:
            if path.is_dir():
                raise UserError(f"{path} is a directory; pass either one directory or checkpoint files")
        paths = list(inputs)
        if all(NUMBERED.fullmatch(p.name) for p in paths):
            paths.sort(key=lambda p: int(NUMBERED.fullmatch(p.name).group(1)))  # type: ignore[union-attr]
    return paths[-last:] if last is not None else paths


def _model_state(payload: dict[str, Any], path: Path) -> dict[str, Tensor]:
    state = payload.get("model")
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise UserError(f"{path} has no 'model' state dict; pass checkpoints written by seq2seq-train")
    return model_weights(payload)  # a LoRA run's adapters merged: each checkpoint's model, then the mean


def _check_same_family(reference: dict[str, Any], config: dict[str, Any], first: Path, path: Path) -> None:
    """Models of two families (seq2seq.model.FAMILY_BUILDERS) share no weights worth averaging."""
    if family_of(config) != family_of(reference):
        raise UserError(f"{path} holds a model of the family {family_of(config)} but {first} one of "
                        f"{family_of(reference)}; average checkpoints of the same model only")  # fmt: skip


def _check_same_settings(reference: dict[str, Any], config: dict[str, Any], first: Path, path: Path) -> None:
    """Weights of equal shapes trained under other settings (a prefix LM and a causal model, RoPE and
    sinusoidal positions) mean different things; the mean of them is neither model."""
    compared = sorted(set(reference) & set(config) - set(HOW_IT_RUNS))
    changes = [
        f"{key}: {reference[key]!r} → {config[key]!r}" for key in compared if reference[key] != config[key]
    ]
    if changes:
        raise UserError(
            f"{path} was trained with other model settings than {first} ({', '.join(changes[:3])}); "
            "average checkpoints of the same model only"
        )


def _check_compatible(
    reference: dict[str, Tensor], state: dict[str, Tensor], first: Path, path: Path
) -> None:
    """One-line errors for checkpoints of different models."""
    missing, extra = sorted(set(reference) - set(state)), sorted(set(state) - set(reference))
    if missing or extra:
        what = f"lacks {missing[:3]}" if missing else f"has extra {extra[:3]}"
        raise UserError(f"{path} {what} compared with {first}; average checkpoints of the same model only")
    for key, value in reference.items():
        if state[key].shape != value.shape:
            raise UserError(
                f"parameter {key} is {tuple(value.shape)} in {first} but {tuple(state[key].shape)} "
                f"in {path}; average checkpoints of the same model only"
            )


def _tied_keys(state: dict[str, Tensor]) -> dict[str, str]:
    """key -> the first key that is the very same tensor view (tied weights)."""
    first: dict[tuple, str] = {}
    tied = {}
    for key, value in state.items():
        view = (
            value.untyped_storage().data_ptr(),
            value.storage_offset(),
            tuple(value.shape),
            value.stride(),
            value.dtype,
        )
        tied[key] = first.setdefault(view, key)
    return tied


def average_checkpoints(paths: Sequence[Path]) -> dict[str, Any]:
    """The newest payload with its model weights replaced by the mean over `paths` (loaded one at a time)."""
    if not paths:
        raise UserError("no checkpoints to average")
    sums: dict[str, Tensor] = {}
    reference: dict[str, Tensor] = {}
    payload: dict[str, Any] = {}
    reference_config: dict[str, Any] = {}
    for path in paths:
        payload = load_checkpoint(path)
        state, config = _model_state(payload, path), payload.get("model_config") or {}
        if not reference:
            reference, reference_config = state, config
            sums = {k: v.double() if v.is_floating_point() else v for k, v in state.items()}
            continue
        _check_same_family(reference_config, config, paths[0], path)
        _check_compatible(reference, state, paths[0], path)
        _check_same_settings(reference_config, config, paths[0], path)
        for key, value in state.items():
            sums[key] = sums[key] + value.double() if value.is_floating_point() else value
    newest = _model_state(payload, paths[-1])
    averaged: dict[str, Tensor] = {}
    for key, first in _tied_keys(newest).items():
        if first != key:
            averaged[key] = averaged[first]
        else:
            total = sums[key]
            averaged[key] = (
                (total / len(paths)).to(newest[key].dtype) if newest[key].is_floating_point() else total
            )
    dropped = [key for key in TRAINING_STATE_KEYS if key in payload]
    if dropped:
        log.info("dropping training state %s from the averaged checkpoint", ", ".join(dropped))
    kept = {k: v for k, v in payload.items() if k not in (*dropped, LORA_KEY, "format_version")}
    return {**kept, "model": averaged, "averaged_from": [str(p) for p in paths]}


def numbered_checkpoints(directory: Path) -> list[Path]:
    """The directory's checkpoint_{step}.pt files, oldest first (steps compared as numbers)."""
    found = [p for p in directory.glob("checkpoint_*.pt") if NUMBERED.fullmatch(p.name) and p.is_file()]
    return sorted(found, key=checkpoint_step)


def checkpoint_step(path: Path) -> int:
    """The step in a checkpoint_{step}.pt name."""
    return int(NUMBERED.fullmatch(path.name).group(1))  # type: ignore[union-attr]


def average_and_validate(
    run_dir: Path,
    model: nn.Module,
    validate: Callable[..., dict[str, Any]],
    *,
    last: int,
    step: int,
    dev_pairs: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """averaged.pt: the mean of the run's newest `last` numbered checkpoints, scored on the whole dev set.

    `step` is the run's final update: numbered checkpoints above it are not this run's and are never
    averaged. With fewer than two checkpoints the final weights (those of last.pt) are scored the same
    way instead, so a run's objective is always one metric. Returns what was measured (the steps, the
    checkpoint scored, dev loss, BLEU, chrF, the dev pairs decoded); `dev_pairs` is (decoded, in the dev
    files). Runs after training: the model's weights are replaced by the average.
    """
    paths = [p for p in numbered_checkpoints(run_dir) if checkpoint_step(p) <= step][-last:]
    if len(paths) < 2:
        return score_final_weights(
            run_dir, model, validate, step=step, dev_pairs=dev_pairs, setting=f"trainer.average_last={last}",
            found=f"{len(paths)} numbered checkpoint(s) of this run in {run_dir}",
            hint="lower trainer.save_every to average",
        )  # fmt: skip
    steps = [checkpoint_step(p) for p in paths]
    return average_paths_and_validate(run_dir, model, validate, paths, steps, dev_pairs=dev_pairs)


def average_paths_and_validate(
    run_dir: Path,
    model: nn.Module,
    validate: Callable[..., dict[str, Any]],
    paths: Sequence[Path],
    steps: list[int],
    *,
    dev_pairs: tuple[int, int] | None,
) -> dict[str, Any]:
    """averaged.pt: the mean of the weights in `paths` (those of updates `steps`, oldest first; the newest
    file gives everything else), scored on the whole dev set; the model is left holding the average."""
    payload = average_checkpoints(paths)
    load_merged_weights(model, payload)  # into a LoRA run's model too (its adapters zeroed)
    record = scored(model, validate, steps, run_dir / "averaged.pt", averaged=True, dev_pairs=dev_pairs)
    save_checkpoint(run_dir / "averaged.pt", {**payload, "averaged_dev": record})
    log.info(
        "averaged.pt: the mean of %d checkpoints (updates %s); on %s: loss %.2f, BLEU %s",
        len(paths), ", ".join(map(str, steps)), _dev_set(record), record["loss"], _bleu(record),
    )  # fmt: skip
    return record


def score_final_weights(
    run_dir: Path,
    model: nn.Module,
    validate: Callable[..., dict[str, Any]],
    *,
    step: int,
    dev_pairs: tuple[int, int] | None,
    setting: str,
    found: str,
    hint: str,
) -> dict[str, Any]:
    """The fallback when too few weights are there to average: the final weights (last.pt's, which the
    model holds) scored on the same dev pairs, said in one line."""
    record = scored(model, validate, [step], run_dir / "last.pt", averaged=False, dev_pairs=dev_pairs)
    log.warning(
        "%s: %s, too few to average; last.pt (update %d) is scored on %s in place of an average: "
        "loss %.2f, BLEU %s (%s)",
        setting, found, step, _dev_set(record), record["loss"], _bleu(record), hint,
    )  # fmt: skip
    return record


def scored(
    model: nn.Module,
    validate: Callable[..., dict[str, Any]],
    steps: list[int],
    checkpoint: Path,
    *,
    averaged: bool,
    dev_pairs: tuple[int, int] | None,
) -> dict[str, Any]:
    """What summary.json and averaged.pt record: which weights were scored, on what, and the scores."""
    metrics = validate(model, steps[-1], all_sentences=True)
    record: dict[str, Any] = {"steps": steps, "checkpoint": str(checkpoint), "averaged": averaged}
    if dev_pairs is not None:
        record.update(dev_pairs=dev_pairs[0], dev_pairs_left_out=dev_pairs[1] - dev_pairs[0])
    record.update({k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))})
    return record


def _dev_set(record: dict[str, Any]) -> str:
    """'all 20 dev pairs', or which ones the data filter left out: the claim the log makes must hold."""
    if "dev_pairs" not in record:
        return "the whole dev set"
    kept, left_out = record["dev_pairs"], record["dev_pairs_left_out"]
    if not left_out:
        return f"all {kept} dev pairs"
    return (
        f"{kept} of {kept + left_out} dev pairs (the {left_out} with an empty side or a side longer "
        "than data.filter.max_tokens_per_side are left out)"
    )


def _bleu(record: dict[str, Any]) -> str:
    return "n/a" if "bleu" not in record else f"{record['bleu']:.2f}"

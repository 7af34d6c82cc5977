"""seq2seq-average: average the model weights of the last N checkpoints into one checkpoint.

Averaging the final checkpoints of a run (Vaswani et al., 2017) usually gains a little BLEU for
free. The output keeps everything else from the newest input (model_config, config, tokenizer,
step...) except optimizer, scheduler and grad-scaler state: those describe the newest weights,
not the average, and would only make the file larger. Weights shared inside a checkpoint (tied
embeddings) stay shared in the output.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch import Tensor

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.cli.common import exit_on_user_error
from seq2seq.errors import UserError

log = logging.getLogger(__name__)

NUMBERED = re.compile(r"checkpoint_(\d+)\.pt")
TRAINING_STATE_KEYS = ("optimizer", "scheduler", "scaler", "grad_scaler")


def find_checkpoints(inputs: Sequence[Path], last: int | None) -> list[Path]:
    """The checkpoints to average, oldest first.

    One directory: its checkpoint_{step}.pt files by step (as numbers). Files: as given, or by step
    when every name is numbered. `last` keeps only the newest N.
    """
    if last is not None and last < 1:
        raise UserError(f"--last {last} must be at least 1")
    if len(inputs) == 1 and inputs[0].is_dir():
        found = [p for p in inputs[0].iterdir() if NUMBERED.fullmatch(p.name) and p.is_file()]
        if not found:
            raise UserError(
                f"{inputs[0]} holds no checkpoint_{{step}}.pt files; pass the run's checkpoint directory"
            )
        paths = sorted(found, key=lambda p: int(NUMBERED.fullmatch(p.name).group(1)))  # type: ignore[union-attr]
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
    return state


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
    for path in paths:
        payload = load_checkpoint(path)
        state = _model_state(payload, path)
        if not reference:
            reference = state
            sums = {k: v.double() if v.is_floating_point() else v for k, v in state.items()}
            continue
        _check_compatible(reference, state, paths[0], path)
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
    kept = {k: v for k, v in payload.items() if k not in dropped and k != "format_version"}
    return {**kept, "model": averaged, "averaged_from": [str(p) for p in paths]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seq2seq-average",
        description="Average the model weights of several checkpoints into one (for translation).",
        epilog="example: seq2seq-average --inputs runs/en-es/checkpoints --last 5 --output avg5.pt",
    )
    parser.add_argument(
        "--inputs",
        nargs="+",
        required=True,
        type=Path,
        metavar="DIR_OR_FILE",
        help="a checkpoint directory (uses its checkpoint_{step}.pt files) or checkpoint files",
    )
    parser.add_argument(
        "--last",
        type=int,
        default=None,
        metavar="N",
        help="average only the N newest checkpoints (default: all)",
    )
    parser.add_argument("--output", required=True, type=Path, help="where to write the averaged checkpoint")
    return parser


@exit_on_user_error
def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    paths = find_checkpoints(args.inputs, args.last)
    if any(args.output.resolve() == p.resolve() for p in paths):
        raise UserError(f"--output {args.output} is one of the inputs; write the average to a new file")
    log.info("averaging %d checkpoints: %s", len(paths), ", ".join(p.name for p in paths))
    save_checkpoint(args.output, average_checkpoints(paths))


if __name__ == "__main__":
    main(sys.argv[1:])

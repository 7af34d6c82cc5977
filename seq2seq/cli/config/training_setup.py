"""What seq2seq-train and seq2seq-qe-train both do before their training loop: refuse config targets
outside the package, tell the family of the configured model, seed every generator, read the loop's
settings and find the checkpoint to resume."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from seq2seq.errors import UserError
from seq2seq.model import FAMILY_BUILDERS
from seq2seq.model.families import ENCODER_DECODER
from seq2seq.train.loop import TrainerOptions
from seq2seq.train.lora import lora_settings
from seq2seq.train.sharding import check_strategy

ALLOWED_TARGET_PREFIXES = ("seq2seq.", "torch.")
NO_RESUME = ("none", "null", "false", "never")


def check_targets(node: Any, path: str = "") -> None:
    """Only seq2seq.* and torch.* may be instantiated from a config."""
    if isinstance(node, DictConfig):
        target = node.get("_target_") if "_target_" in node else None
        if target is not None and not str(target).startswith(ALLOWED_TARGET_PREFIXES):
            raise UserError(
                f"{path or 'config'}._target_={target!r} is not allowed; "
                f"targets must start with {' or '.join(ALLOWED_TARGET_PREFIXES)}"
            )
        for key in node:
            check_targets(node[key], f"{path}.{key}" if path else str(key))


def model_family(cfg_model: DictConfig) -> str:
    """The family `model._target_` builds (seq2seq.model.FAMILY_BUILDERS), known before building it."""
    builder = hydra.utils.get_method(str(cfg_model._target_))
    return next((family for family, known in FAMILY_BUILDERS.items() if builder is known), ENCODER_DECODER)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def trainer_options(cfg: DictConfig) -> TrainerOptions:
    """The loop's settings; `precision` as configured (the Trainer resolves `auto` once, for the run)."""
    fields = TrainerOptions.__dataclass_fields__
    options = TrainerOptions(**{k: v for k, v in OmegaConf.to_container(cfg.trainer).items() if k in fields})
    if options.update_freq < 1:
        raise UserError(f"trainer.update_freq={options.update_freq} must be at least 1")
    lora_settings(options.lora)  # trainer.lora's keys and values, checked before the run directory
    check_strategy(options.strategy, average_fraction=cfg.trainer.get("average_fraction"))
    return options


def resume_path(setting: str, run_dir: Path) -> Path | None:
    """trainer.resume: auto (the run directory's last.pt, if any), a checkpoint file, or none."""
    if setting in NO_RESUME:
        return None
    if setting == "auto":
        last = run_dir / "last.pt"
        return last if last.is_file() else None
    path = Path(hydra.utils.to_absolute_path(setting))
    if not path.is_file():
        raise UserError(
            f"trainer.resume={setting}: no such checkpoint file; pass an existing .pt file or 'auto'"
        )
    return path

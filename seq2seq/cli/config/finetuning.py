"""seq2seq-train init_from=CHECKPOINT: the run's config made to agree with the checkpoint it starts from.

The architecture and the tokenizer(s) are the checkpoint's (seq2seq.train.init_from). A setting is the
run's own choice when it is named on the command line or differs from what the run's config would hold
without the command line (train.yaml's defaults, with the run's `data` group): an experiment's or a
`model=...` choice's values count. Such a choice of an architecture key must equal the checkpoint's;
any choice of a data.tokenizer key is refused (no tokenizer is trained). What is left of the `model`
group is replaced by the checkpoint's settings, so the saved config, the fingerprint and the schedule
(noam reads model.d_model) see the model that is trained.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra import compose
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from seq2seq.errors import UserError
from seq2seq.train.init_from import StartingPoint, model_settings, read_starting_point

# Experiments that fine-tune: init_from must be given with them. (An experiment's `init_from: ???` would
# not do: a mandatory value merged onto train.yaml's null leaves the null.)
FINE_TUNING_EXPERIMENTS = ("finetune",)


def init_from_path(cfg: DictConfig, *, experiment: str | None = None) -> Path | None:
    """The `init_from` setting as an absolute path; None when unset. Unset with a fine-tuning `experiment`
    (the run's choice), or mandatory (???) and not given: a one-line UserError."""
    value = None if OmegaConf.is_missing(cfg, "init_from") else cfg.get("init_from")
    if value is None or str(value) == "":
        if OmegaConf.is_missing(cfg, "init_from") or experiment in FINE_TUNING_EXPERIMENTS:
            who = f"experiment={experiment}" if experiment else "this run"
            raise UserError(f"init_from is not set: {who} fine-tunes a trained model; add init_from=PATH.pt "
                            "(a checkpoint written by seq2seq-train or seq2seq-import)")  # fmt: skip
        return None
    return Path(to_absolute_path(str(value)))


def command_line_keys(overrides: Iterable[str]) -> set[str]:
    """The dotted keys the command-line overrides set or delete (`model.d_model=1`, `+x=1`, `~y`), group
    choices (`model=base`) included under the group's name."""
    parsed = OverridesParser.create().parse_overrides(overrides=list(overrides))
    return {override.key_or_group.replace("/", ".") for override in parsed}


def chosen_keys(composed: dict[str, Any], default: dict[str, Any], named: set[str], prefix: str) -> set[str]:
    """Keys of the `composed` section (at `prefix`) that the run chose: named on the command line (the
    key, or the section: `model=base` chooses every key of the model group) or unlike `default`, what
    the section holds without the command line."""
    whole = prefix in named
    return {
        key
        for key, value in composed.items()
        if whole or f"{prefix}.{key}" in named or key not in default or default[key] != value
    }


def apply_starting_point(
    cfg: DictConfig, start: StartingPoint, *, default: DictConfig, named: set[str]
) -> None:
    """Refuse data.tokenizer choices, replace cfg.model by the checkpoint's settings (refusing
    architecture choices that differ: model_settings).
    `default`: the run's config without the command line; `named`: command_line_keys."""
    tokenizer = OmegaConf.to_container(cfg.data.tokenizer, resolve=True)
    chosen = sorted(chosen_keys(tokenizer, OmegaConf.to_container(default.data.tokenizer, resolve=True),
                                named, "data.tokenizer"))  # fmt: skip
    if chosen:
        shown = ", ".join(f"data.tokenizer.{key}={tokenizer[key]}" for key in chosen)
        raise UserError(f"{shown}: init_from={start.path} brings its own tokenizer and none is trained; "
                        "drop these settings")  # fmt: skip
    composed = OmegaConf.to_container(cfg.model, resolve=True)
    explicit = chosen_keys(composed, OmegaConf.to_container(default.model, resolve=True), named, "model")
    cfg.model = OmegaConf.create(model_settings(start, composed, explicit=explicit))


def starting_point(cfg: DictConfig) -> StartingPoint | None:
    """init_from's checkpoint, read and checked, with cfg changed to agree with it (apply_starting_point);
    None without init_from. Needs the running Hydra app (its overrides, and compose for the defaults)."""
    hydra = HydraConfig.get()
    path = init_from_path(cfg, experiment=hydra.runtime.choices.get("experiment"))
    if path is None:
        return None
    start = read_starting_point(path)
    data = hydra.runtime.choices.get("data")
    default = compose(hydra.job.config_name, overrides=[f"data={data}"] if data else [])
    named = command_line_keys(hydra.overrides.task)
    apply_starting_point(cfg, start, default=default, named=named)
    return start

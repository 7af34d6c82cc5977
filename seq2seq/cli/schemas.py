"""Typed schemas for the scalar settings, so a bad value fails when Hydra composes the config.

Registered in Hydra's ConfigStore as `schema/model` and `schema/trainer`; the YAML files of
those groups list them first in their defaults, which gives `trainer.max_updates=abc` or an
unknown key Hydra's own one-line error before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class ModelSchema:
    _target_: str = "seq2seq.model.build_model"
    d_model: int = 512
    n_heads: int = 8
    ffn_dim: int = 2048
    encoder_layers: int = 6
    decoder_layers: int = 6
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    positional: str = "sinusoidal"
    alibi_cross_attention: bool = False
    attention: str = "sdpa"
    window: int | None = None
    cross_downsample: int = 1
    downsample_mode: str = "avg"
    norm: str = "pre"
    activation: str = "relu"
    tie_embeddings: bool = True
    checkpoint_activations: bool = False
    max_positions: int = 1024


@dataclass
class TrainerSchema:
    """Types of the `trainer` group's keys; their values live in configs/trainer/default.yaml only."""

    max_updates: int = MISSING
    max_epochs: int = MISSING
    max_minutes: float | None = MISSING
    max_tokens: int = MISSING
    update_freq: int = MISSING
    clip_norm: float | None = MISSING
    precision: str = MISSING
    device: str = MISSING
    num_threads: int | None = MISSING
    validate_every: int | None = MISSING
    validate_every_minutes: float | None = MISSING
    validate_bleu: bool = MISSING
    validate_max_sentences: int | None = MISSING
    early_stop_patience: int | None = MISSING
    save_every: int | None = MISSING
    keep_last: int = MISSING
    log_every: int = MISSING
    resume: str = MISSING
    max_consecutive_nonfinite: int = MISSING
    sample_translations: int = MISSING
    attention_plot: bool = MISSING
    progress_bar: str = MISSING


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(group="schema", name="model", node=ModelSchema)
    store.store(group="schema", name="trainer", node=TrainerSchema)

"""Typed schemas for the scalar settings, so a bad value fails when Hydra composes the config.

Registered in Hydra's ConfigStore as `schema/model` and `schema/trainer`; the YAML files of
those groups list them first in their defaults, which gives `trainer.max_updates=abc` or an
unknown key Hydra's own one-line error before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore


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
    max_updates: int = 100000
    max_epochs: int = 1000
    max_minutes: float | None = None
    max_tokens: int = 4096
    update_freq: int = 1
    clip_norm: float | None = 1.0
    precision: str = "auto"
    device: str = "auto"
    num_threads: int | None = None
    validate_every: int | None = 2000
    validate_every_minutes: float | None = None
    validate_bleu: bool = True
    validate_max_sentences: int | None = None
    early_stop_patience: int | None = None
    save_every: int | None = 2000
    keep_last: int = 3
    log_every: int = 50
    resume: str = "auto"
    max_consecutive_nonfinite: int = 10
    sample_translations: int = 3
    attention_plot: bool = True
    progress_bar: str = "auto"


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(group="schema", name="model", node=ModelSchema)
    store.store(group="schema", name="trainer", node=TrainerSchema)

"""seq2seq-qe-train: train an encoder-only model to predict a translation's quality (seq2seq.qe).

seq2seq-qe-train data_dir=runs/qe_data                       # runs/qe: best.pt follows the dev loss
seq2seq-qe-train data_dir=runs/qe_data model.layers=6 trainer.max_minutes=20
seq2seq-qe-train -m data_dir=runs/qe_data model.d_model=128,256  # a sweep, like seq2seq-train's

The same loop as seq2seq-train (seq2seq.train.loop.Trainer): atomic checkpoints, exact resume (run the
same command again), signals, TensorBoard; only the batches, the objective and validation are the QE
task's (seq2seq.qe.training).
"""

from __future__ import annotations

import json
import logging
from functools import partial
from pathlib import Path
from typing import Any

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn

from seq2seq.cli.config import training_setup as setup
from seq2seq.cli.config.hydra_records import write_hydra_records
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.resolvers import register_resolvers
from seq2seq.cli.config.schemas import CommandSettings, register_schemas
from seq2seq.cli.config.setting_checks import progress_bar_setting
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes
from seq2seq.devices import pick_device
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.model import count_parameters
from seq2seq.model.families import ENCODER_ONLY
from seq2seq.qe.corpus import TOKENIZER_FILES, read_qe_corpus
from seq2seq.qe.training import QEDataset, QEValidator, qe_batch_loss, squared_error
from seq2seq.qe.warm_start import warm_start
from seq2seq.train.fingerprint import SAME_NUMBERS_MODEL_KEYS, settings_fingerprint
from seq2seq.train.finish import FinishSettings
from seq2seq.train.freezing import freeze_parameters
from seq2seq.train.loop import Trainer, TrainerOptions
from seq2seq.train.lora import add_adapters, lora_settings
from seq2seq.train.reporting import Reporter
from seq2seq.train.run_dir import (
    check_resume,
    check_run_directory,
    hold_run_directory,
    release_run_directory,
)
from seq2seq.train.schedules import ScheduledLR

log = logging.getLogger("seq2seq.qe_train")

register_schemas()
register_resolvers()


def read_tokenizers(data_dir: Path) -> tuple[TextTokenizer, TextTokenizer, dict[str, bytes | None]]:
    """The translation model's tokenizers that seq2seq-qe-data saved beside the corpus."""
    src_file, tgt_file = data_dir / TOKENIZER_FILES["src"], data_dir / TOKENIZER_FILES["tgt"]
    if not src_file.is_file():
        raise UserError(f"{data_dir} has no {src_file.name}; make the QE corpus with seq2seq-qe-data")
    src_bytes = src_file.read_bytes()
    tgt_bytes = tgt_file.read_bytes() if tgt_file.is_file() else None
    src = tokenizer_from_bytes(src_bytes)
    tgt = tokenizer_from_bytes(tgt_bytes) if tgt_bytes is not None else src
    return src, tgt, {"src": src_bytes, "tgt": tgt_bytes}


def qe_fingerprint(cfg: DictConfig, data_dir: Path) -> dict[str, Any]:
    """What defines a QE run (a resume must keep it): the model (less the keys that compute the same
    numbers another way), optim, schedule, seed, the batch recipe, the corpus and tokenizers by content."""
    config = OmegaConf.to_container(cfg, resolve=True)
    chosen = {
        "model": {k: v for k, v in config["model"].items() if k not in SAME_NUMBERS_MODEL_KEYS},
        **{section: config[section] for section in ("optim", "schedule", "seed")},
        "trainer": {key: config["trainer"][key] for key in ("max_tokens", "update_freq", "clip_norm")},
        "init_from": config.get("init_from"),
    }
    if config["trainer"].get("freeze"):  # only when used: older runs keep their fingerprints
        chosen["trainer"]["freeze"] = config["trainer"]["freeze"]
    if config["trainer"].get("lora") is not None:  # likewise, completed with its defaults
        chosen["trainer"]["lora"] = lora_settings(config["trainer"]["lora"]).record()
    files = {name: data_dir / name for name in ("train.tsv", "dev.tsv", TOKENIZER_FILES["src"])}
    if (data_dir / TOKENIZER_FILES["tgt"]).is_file():
        files[TOKENIZER_FILES["tgt"]] = data_dir / TOKENIZER_FILES["tgt"]
    return settings_fingerprint(chosen, files)


def check_translation_only_settings(trainer: DictConfig) -> None:
    """The end-of-run steps of a translation run (averaging by dev BLEU, tuning the decoding) and sharding
    over ranks do not apply to a QE run: asked for, they are a one-line error rather than silently
    skipped."""
    finish = FinishSettings.from_config(trainer)
    asked = [name for name in ("average_last", "average_fraction") if getattr(finish, name) is not None]
    asked += ["tune_decoding"] if finish.tune_decoding else []
    if trainer.get("strategy", "ddp") != "ddp":
        raise UserError(f"trainer.strategy={trainer.strategy} shards a model over torchrun's ranks; "
                        "seq2seq-qe-train trains in one process: drop trainer.strategy")  # fmt: skip
    if asked:
        keys = ", ".join(f"trainer.{name}" for name in asked)
        raise UserError(f"{keys} belong to translation runs; a QE run keeps numbered checkpoints: average "
                        "them with seq2seq-average --inputs RUN_DIR --last N")  # fmt: skip


@exit_on_user_error
def train_qe(cfg: DictConfig) -> float | None:
    """One QE training run; returns the best dev loss (what a sweeper minimises)."""
    command = check_qe_settings(cfg)
    data_dir = Path(hydra.utils.to_absolute_path(str(cfg.data_dir)))
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    device = pick_device(command.device, setting="trainer.device")
    if command.num_threads:
        torch.set_num_threads(command.num_threads)
    setup.seed_everything(int(cfg.seed))
    options = setup.trainer_options(cfg)
    checkpoint = setup.resume_path(command.resume, run_dir)
    hold_run_directory(run_dir)  # one training process per run directory
    check_run_directory(run_dir, checkpoint, command.resume)
    src_tokenizer, tgt_tokenizer, tokenizer_payload = read_tokenizers(data_dir)
    fingerprint = qe_fingerprint(cfg, data_dir)
    resumed = None if checkpoint is None else check_resume(checkpoint, run_dir, fingerprint)
    write_hydra_records(run_dir, cfg)  # only now: a refused command leaves the directory as it was
    model = build_qe_model(cfg, src_tokenizer, tgt_tokenizer, device, initialise=checkpoint is None)
    add_adapters(model, options.lora)  # the head trains only if trainer.lora.train names it: ["head.*"]
    freeze_parameters(model, options.freeze)
    datasets = read_datasets(data_dir, src_tokenizer, tgt_tokenizer, model.max_positions)
    extras = {"config": OmegaConf.to_container(cfg, resolve=True), "model_config": model.config,
              "tokenizer": tokenizer_payload, "fingerprint": fingerprint}  # fmt: skip
    trainer = build_qe_trainer(cfg, command, model, datasets, run_dir=run_dir, device=device,
                               options=options, checkpoint_extras=extras)  # fmt: skip
    if checkpoint is not None:
        trainer.resume_from(checkpoint, resumed)
    log.info("training a QE model in %s on %s (%s)", run_dir, device, trainer.precision)
    state = trainer.fit()
    write_summary(run_dir, state, count_parameters(model))
    release_run_directory(run_dir)
    if trainer.stopping_signal is not None:
        raise SystemExit(128 + trainer.stopping_signal)
    return state.best_loss


def check_qe_settings(cfg: DictConfig) -> CommandSettings:
    """The settings checked before the run directory is touched: the model must be encoder-only, and the
    end-of-run steps of translation runs are not asked for."""
    setup.check_targets(cfg)
    if setup.model_family(cfg.model) != ENCODER_ONLY:
        raise UserError(f"seq2seq-qe-train trains model=encoder_only, not {cfg.model._target_}; "
                        "pass model=encoder_only (or a config built on it)")  # fmt: skip
    command = CommandSettings.from_config(cfg.trainer)
    check_translation_only_settings(cfg.trainer)
    return command


def build_qe_model(
    cfg: DictConfig, src_tokenizer: TextTokenizer, tgt_tokenizer: TextTokenizer, device: torch.device, *,
    initialise: bool,
) -> nn.Module:  # fmt: skip
    """The configured encoder-only model, sized by the tokenizers; `initialise`: take init_from's
    weights (a resumed run takes every weight from its checkpoint instead)."""
    torch.manual_seed(int(cfg.seed))
    vocab_sizes = {"src_vocab_size": src_tokenizer.vocab_size, "tgt_vocab_size": tgt_tokenizer.vocab_size}
    model = instantiate(cfg.model, **vocab_sizes, pad_id=src_tokenizer.pad_id, _convert_="all").to(device)
    log.info("QE model: %s parameters", f"{count_parameters(model):,}")
    if cfg.init_from and initialise:
        warm_start(model, Path(hydra.utils.to_absolute_path(str(cfg.init_from))))
    return model


def read_datasets(
    data_dir: Path, src_tokenizer: TextTokenizer, tgt_tokenizer: TextTokenizer, max_positions: int
) -> dict[str, QEDataset]:
    """The QE corpus's train.tsv and dev.tsv, encoded."""
    encode = partial(QEDataset.encode, max_positions=max_positions)
    datasets = {
        split: encode(
            read_qe_corpus(data_dir / f"{split}.tsv"), src_tokenizer, tgt_tokenizer, name=f"{split}.tsv"
        )
        for split in ("train", "dev")
    }
    log.info("QE corpus: %d training pairs, %d dev pairs", len(datasets["train"]), len(datasets["dev"]))
    return datasets


def build_qe_trainer(
    cfg: DictConfig, command: CommandSettings, model: nn.Module, datasets: dict[str, QEDataset], *,
    run_dir: Path, device: torch.device, options: TrainerOptions, checkpoint_extras: dict[str, Any],
) -> Trainer:  # fmt: skip
    """seq2seq-train's loop around the QE model: its optimizer and schedule, squared-error batches and
    dev validation (loss, Pearson, Spearman)."""
    optimizer = instantiate(cfg.optim)(model)
    scheduler = ScheduledLR(optimizer, instantiate(cfg.schedule))
    setup.seed_everything(int(cfg.seed))
    pad_id = model.pad_id  # the tokenizers' (build_qe_model)
    progress = progress_bar_setting(command.progress_bar, setting="trainer.progress_bar")
    reporter = Reporter(
        log_dir=run_dir / "tensorboard", progress_bar=progress, units="pairs", perplexity=False
    )
    trainer = Trainer(
        model=model, optimizer=optimizer, scheduler=scheduler, loss_fn=squared_error,
        batches=datasets["train"].sampler(command.max_tokens, seed=int(cfg.seed), shuffle=True),
        make_batch=lambda indices: datasets["train"].batch(indices, pad_id), validate=None,
        reporter=reporter, output_dir=run_dir, options=options, device=device, objective=qe_batch_loss,
        checkpoint_extras=checkpoint_extras,
    )  # fmt: skip
    trainer.validate_fn = QEValidator(datasets["dev"], pad_id=pad_id, max_tokens=command.max_tokens,
                                      device=device, precision=trainer.precision)  # fmt: skip
    return trainer


def write_summary(run_dir: Path, state: Any, n_params: int) -> None:
    """summary.json: the run's updates, time and validations (dev loss, Pearson, Spearman)."""
    best = min(state.history, key=lambda record: record.get("loss", float("inf")), default={})
    summary = {
        "overrides": list(HydraConfig.get().overrides.task),
        "updates": state.step,
        "epochs": state.epoch,
        "minutes": state.elapsed_seconds / 60,
        "parameters": n_params,
        "best_dev_loss": state.best_loss,
        "best": best,  # the validation best.pt holds: its loss, pearson and spearman
        "history": state.history,
        "checkpoint": str(run_dir / "best.pt"),
    }
    with atomic_output(run_dir / "summary.json", "w", encoding="utf-8") as handle:
        handle.write(json.dumps(summary, indent=2))
    pearson = f"{best['pearson']:.3f}" if "pearson" in best else "n/a"
    log.info("done: %d updates in %.1f minutes; best dev Pearson %s; checkpoints in %s", state.step,
             state.elapsed_seconds / 60, pearson, run_dir)  # fmt: skip


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="qe_train")
def main(cfg: DictConfig) -> float | None:
    return train_qe(cfg)


if __name__ == "__main__":
    from seq2seq.cli.qe_train import main as main_of_module  # importable by name: launchers pickle the job

    main_of_module()

"""seq2seq-train: compose the config, build data/model/optimizer, train, checkpoint, report.

seq2seq-train                                   # the default: small model, Bible en->es
seq2seq-train model=base trainer.max_minutes=30 trainer.precision=fp32
seq2seq-train experiment=finetune init_from=runs/bible.en-es/best.pt data=parallel_files data.dir=DIR
seq2seq-train -m model/positional=sinusoidal,alibi,rope
torchrun --nproc_per_node=2 -m seq2seq.cli.train trainer.device=cpu
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn

from seq2seq.cli.config.data_config import DEPRECATED_DATA_KEYS, corpus_entries, dev_entries, training_corpora
from seq2seq.cli.config.finetuning import starting_point
from seq2seq.cli.config.guided_alignment import check_guided_alignment
from seq2seq.cli.config.hydra_records import write_hydra_records
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.renamed_keys import accept_deprecated_keys
from seq2seq.cli.config.resolvers import register_resolvers
from seq2seq.cli.config.schemas import CommandSettings, register_schemas
from seq2seq.cli.config.setting_checks import progress_bar_setting
from seq2seq.cli.config.training_data import RunData, load_data
from seq2seq.cli.config.training_setup import (
    check_targets,
    model_family,
    resume_path,
    seed_everything,
    trainer_options,
)
from seq2seq.decode.options import SearchOptions
from seq2seq.devices import pick_device
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.model import check_embedding_sharing, count_parameters
from seq2seq.model.families import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY
from seq2seq.nn.linear import bound_onednn_caches
from seq2seq.train import distributed, sharding
from seq2seq.train.fingerprint import run_fingerprint
from seq2seq.train.finish import FinishSettings, finish_run, objective
from seq2seq.train.freezing import freeze_parameters
from seq2seq.train.init_from import StartingPoint, build_starting_model
from seq2seq.train.loop import Trainer, TrainerOptions, run_precision
from seq2seq.train.lora import add_adapters, check_alignment_query
from seq2seq.train.objective import TrainingLoss
from seq2seq.train.reporting import Reporter
from seq2seq.train.run_dir import (
    check_resume,
    check_run_directory,
    hold_run_directory,
    release_run_directory,
)
from seq2seq.train.schedules import ScheduledLR
from seq2seq.train.sharded_checkpoint import check_resume_strategy
from seq2seq.train.snapshots import Snapshots
from seq2seq.train.validation import DevDirection, Validator, direction_key

log = logging.getLogger("seq2seq.train")

register_schemas()
register_resolvers()  # ${seq2seq.threads_per_job:} etc. in configs/trainer and configs/sweep


def check_family_settings(cfg: DictConfig, family: str, *, joint: bool | None = None) -> None:
    """Settings that need a family: one-line errors before any data is prepared. `joint`: whether the
    vocabulary is one for both sides (default: data.tokenizer.joint; init_from's tokenizer decides)."""
    if family == ENCODER_ONLY:
        raise UserError("model=encoder_only scores translations, it does not translate; train it on a "
                        "QE corpus with seq2seq-qe-train (docs/quality-estimation.md)")  # fmt: skip
    if family == DECODER_ONLY and not (bool(cfg.data.tokenizer.joint) if joint is None else joint):
        raise UserError("model=decoder_only reads source and target with one embedding; "
                        "set data.tokenizer.joint=true")  # fmt: skip
    source_weight = float(cfg.loss.get("source_weight", 0.0))
    if source_weight and family != DECODER_ONLY:
        raise UserError(f"loss.source_weight={source_weight} adds a source language-model term, which only "
                        "model=decoder_only has; set loss.source_weight=0")  # fmt: skip
    if source_weight and bool(cfg.model.get("prefix_lm", False)):
        raise UserError(f"loss.source_weight={source_weight} needs a causal model: a prefix LM sees the "
                        "whole source; set model.prefix_lm=false or loss.source_weight=0")  # fmt: skip


def build_loss(cfg_loss: DictConfig, pad_id: int) -> TrainingLoss:
    """The configured loss with `pad_id` bound; it must take (hidden, output_weight, target).

    The trainer hands the loss decoder states and the output weight, not logits
    (seq2seq.train.objective.batch_loss); a logits-level function such as label_smoothed_nll would
    otherwise fail with a TypeError at the first batch. `loss.source_weight` and `loss.alignment_weight`
    are the objective's, not the token loss's: a decoder-only model's source language-model term and
    guided alignment's term (seq2seq.cli.config.guided_alignment checks it).
    """
    settings = OmegaConf.to_container(cfg_loss)
    source_weight = float(settings.pop("source_weight", 0.0))
    alignment_weight = float(settings.pop("alignment_weight", 0.0) or 0.0)
    loss_fn = partial(instantiate(settings), pad_id=pad_id)
    try:
        inspect.signature(loss_fn).bind(None, None, None)
    except (TypeError, ValueError):
        raise UserError(
            f"loss._target_={cfg_loss.get('_target_')!r} must take (hidden, output_weight, target, "
            "pad_id=...) like seq2seq.train.loss.projected_label_smoothed_nll; use loss=label_smoothed"
        ) from None
    if source_weight < 0:
        raise UserError(f"loss.source_weight={source_weight} must be zero or positive")
    return TrainingLoss(loss_fn, source_weight=source_weight, alignment_weight=alignment_weight)


@exit_on_user_error
def train(cfg: DictConfig) -> float | None:
    """One training run; returns what a sweeper optimises: with averaging, the whole-dev-set BLEU of the
    checkpoint chosen to translate (the average or best.pt: seq2seq.train.finish), else the best
    validation BLEU."""
    command, finish, family, start = check_run_settings(cfg)
    bound_onednn_caches()  # bf16 autocast and validation build oneDNN primitives per batch shape
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    device = start_process(cfg, command)
    options = trainer_options(cfg)
    checkpoint = resume_path(command.resume, run_dir)
    if distributed.is_main():
        hold_run_directory(run_dir)  # one training process per run directory
    check_run_directory(run_dir, checkpoint, command.resume)  # before anything is written there
    data = load_data(cfg.data, run_dir=run_dir, max_tokens=command.max_tokens, seed=int(cfg.seed),
                     joint_sequence=family == DECODER_ONLY,
                     given_tokenizers=None if start is None else start.tokenizers)  # fmt: skip
    fingerprint = run_fingerprint(OmegaConf.to_container(cfg, resolve=True), corpus_files(cfg.data),
                                  init_from=None if start is None else start.path)  # fmt: skip
    resumed = None if checkpoint is None else check_resume(checkpoint, run_dir, fingerprint)
    if resumed is not None:  # its strategy and an fsdp checkpoint's sharded state, before any write
        check_resume_strategy(checkpoint, resumed, options.strategy)
    model = build_run_model(cfg, data, device, start=start, freeze=options.freeze, lora=options.lora)
    if distributed.is_main():
        write_hydra_records(run_dir, cfg)  # only now: a refused command leaves the directory as it was
    snapshots = open_snapshots(run_dir, finish, resumed)
    loss_fn = build_loss(cfg.loss, data.corpus.pad_id)
    trainer = build_trainer(cfg, data, model, loss_fn, run_dir=run_dir, device=device, options=options,
                            fingerprint=fingerprint, on_update=snapshots)  # fmt: skip
    if checkpoint is not None:
        trainer.resume_from(checkpoint, resumed)
    elif start is not None:  # the starting model's dev scores, before update 1 (not again on resume)
        log.info("validating the starting model (init_from=%s) before update 1", start.path)
        trainer.validate_start()
    log.info("training in %s on %s (%s); TensorBoard logs in %s", run_dir, device, trainer.precision,
             run_dir / "tensorboard")  # fmt: skip
    state = trainer.fit()
    final_model = trainer.evaluation_model()  # the model itself, or with fsdp a whole copy on rank 0
    finished = finish_and_summarise(run_dir, cfg, trainer, final_model, data, finish, state)
    distributed.shutdown()
    exit_if_stopped(trainer)
    return objective(finished, state.best_bleu)


def check_run_settings(
    cfg: DictConfig,
) -> tuple[CommandSettings, FinishSettings, str, StartingPoint | None]:
    """Every setting checked before the run directory is touched: the command's, the end of run's,
    init_from's (cfg.model becomes the checkpoint's: seq2seq.cli.config.finetuning), the model family's and the
    training corpora's. Returns the first two, the family and init_from's checkpoint (or None)."""
    check_targets(cfg)
    command = CommandSettings.from_config(cfg.trainer)
    finish = FinishSettings.from_config(cfg.trainer)
    finish.check(cfg.trainer)
    start = starting_point(cfg)
    family = model_family(cfg.model)
    check_family_settings(cfg, family, joint=None if start is None else start.joint)
    if start is None:  # a checkpoint's model shares what its vocabulary allowed
        check_embedding_sharing(
            bool(cfg.model.get("share_embeddings", False)), joint_vocabulary=bool(cfg.data.tokenizer.joint)
        )
    training_corpora(cfg.data)  # their files, weights, tags and noise: checked before the run directory
    check_guided_alignment(cfg, family)
    return command, finish, family, start


def start_process(cfg: DictConfig, command: CommandSettings) -> torch.device:
    """This process's device (its rank's, in a distributed run), threads and seed."""
    device = pick_device(command.device, setting="trainer.device", local_rank=distributed.local_rank())
    distributed.initialize(device)
    if command.num_threads:
        torch.set_num_threads(command.num_threads)
    seed_everything(int(cfg.seed) + distributed.rank())
    return device


def open_snapshots(run_dir: Path, finish: FinishSettings, resumed: dict[str, Any] | None) -> Snapshots | None:
    """The weights kept for trainer.average_fraction (main process only), less any after a resumed step."""
    if finish.snapshots is None or not distributed.is_main():
        return None
    snapshots = Snapshots(run_dir, finish.snapshots)
    if resumed is not None:
        snapshots.drop_after(int(resumed.get("step", 0)))
    return snapshots


def finish_and_summarise(
    run_dir: Path, cfg: DictConfig, trainer: Trainer, model: nn.Module, data: RunData,
    finish: FinishSettings, state: Any,
) -> dict[str, Any]:  # fmt: skip
    """On the main process: the end of a run that was not stopped by a signal (averaging, the final
    choice, tuning: seq2seq.train.finish), summary.json, and the run directory released."""
    finished: dict[str, Any] = {}
    if not distributed.is_main():
        return finished
    if trainer.stopping_signal is None and trainer.validate_fn is not None:
        finished = finish_run(
            run_dir, model, trainer.validate_fn, finish, step=state.step,
            dev_pairs=(len(data.corpus.dev_src_texts), int(data.corpus.stats["dev"]["pairs"])),
        )  # fmt: skip
    directions = [name for name, _ in data.corpus.dev_direction_ranges]
    write_summary(run_dir, cfg, state, count_parameters(model), trainer.reporter, finished, directions)
    release_run_directory(run_dir)
    return finished


def exit_if_stopped(trainer: Trainer) -> None:
    """Exit as the signal that stopped training would have: a sweep stops here instead of launching its
    next trial, and the interrupted trial's partial dev BLEU never reaches a sweeper as if it had finished."""
    if trainer.stopping_signal is not None:
        log.info("exiting with status %d after %s; last.pt holds the run", 128 + trainer.stopping_signal,
                 trainer.stopping_signal.name)  # fmt: skip
        raise SystemExit(128 + trainer.stopping_signal)


def corpus_files(data: DictConfig) -> dict[str, Path]:
    """The training and dev files the run's fingerprint hashes, as seq2seq.cli.config.data_config reads them."""
    entries = corpus_entries(data) + dev_entries(data)  # "train" and "dev" alone keep older runs' names
    return {f"{key}.{side}": Path(hydra.utils.to_absolute_path(str(entry[side])))
            for key, entry in entries for side in ("src", "tgt")}  # fmt: skip


def build_run_model(
    cfg: DictConfig, data: RunData, device: torch.device, *, start: StartingPoint | None = None,
    freeze: list[str] | None = None, lora: dict[str, Any] | None = None,
) -> nn.Module:  # fmt: skip
    """The configured model, sized by the trained tokenizer, with identical initial weights on every rank;
    or init_from's model with its weights (`start`). `freeze`: trainer.freeze's name patterns; `lora`:
    trainer.lora, adapters added (and all else frozen) before `freeze` applies (seq2seq.train.lora)."""
    torch.manual_seed(int(cfg.seed))
    corpus = data.corpus
    if start is not None:
        model = build_starting_model(start, OmegaConf.to_container(cfg.model, resolve=True)).to(device)
    else:
        model = instantiate(
            cfg.model, src_vocab_size=corpus.src_vocab_size, tgt_vocab_size=corpus.tgt_vocab_size,
            pad_id=corpus.pad_id, _convert_="all",
        ).to(device)  # fmt: skip
    log.info("model: %s parameters, %s", f"{count_parameters(model):,}", OmegaConf.to_container(cfg.model))
    check_alignment_query(add_adapters(model, lora), float(cfg.loss.get("alignment_weight") or 0.0))
    freeze_parameters(model, freeze)
    return model


def build_trainer(
    cfg: DictConfig,
    data: RunData,
    model: nn.Module,
    loss_fn: Any,
    *,
    run_dir: Path,
    device: torch.device,
    options: TrainerOptions,
    fingerprint: dict[str, Any],
    on_update: Snapshots | None = None,
) -> Trainer:
    """Optimizer, schedule, validation, reporting and checkpoint contents around the model; every
    checkpoint carries the run's settings fingerprint (seq2seq.train.fingerprint) for resume checks;
    `on_update` runs after every update (snapshots for trainer.average_fraction)."""
    if options.strategy == sharding.FSDP:  # before the optimizer: fully_shard replaces the parameters
        options.precision = run_precision(options, device)  # the policy's and the trainer's autocast's
        model = sharding.fsdp_model(model, device, options.precision)
    optimizer = instantiate(cfg.optim)(model)
    scheduler = ScheduledLR(optimizer, instantiate(cfg.schedule))
    seed_everything(int(cfg.seed) + distributed.rank())  # dropout streams differ per rank
    wrapped = model
    if distributed.world_size() > 1 and options.strategy == sharding.DDP:
        device_ids = [device.index] if device.type == "cuda" else None
        wrapped = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    main = distributed.is_main()
    command = CommandSettings.from_config(cfg.trainer)
    progress = progress_bar_setting(command.progress_bar, setting="trainer.progress_bar")
    trainer = Trainer(
        model=wrapped, optimizer=optimizer, scheduler=scheduler, loss_fn=loss_fn, batches=data.train_batches,
        make_batch=data.make_batch, validate=None,
        reporter=Reporter(log_dir=run_dir / "tensorboard", progress_bar=progress, enabled=main),
        output_dir=run_dir, options=options, device=device, on_update=on_update,
        checkpoint_extras={
            "config": OmegaConf.to_container(cfg, resolve=True),
            "model_config": model.config,
            "tokenizer": data.corpus.tokenizer_payload,
            "fingerprint": fingerprint,
        },
    )  # fmt: skip
    if main:  # validation runs in the precision the trainer chose for the run
        trainer.validate_fn = build_validator(cfg, command, data, loss_fn, device, trainer.precision)
    return trainer


def build_validator(
    cfg: DictConfig,
    command: CommandSettings,
    data: RunData,
    loss_fn: Any,
    device: torch.device,
    precision: str,
) -> Validator:
    search = SearchOptions.from_config(OmegaConf.to_container(cfg.decode))
    has_cross_attention = model_family(cfg.model) == ENCODER_DECODER
    src_tokenizer, tgt_tokenizer = data.corpus.src_tokenizer, data.corpus.tgt_tokenizer
    directions = [  # each dev direction's target token is forced, as translate does
        DevDirection(name, indices, tgt_tokenizer.for_language(tgt_lang).prefix)
        for (name, indices), (_, tgt_lang) in zip(data.corpus.dev_direction_ranges,
                                                  data.corpus.dev_directions)  # fmt: skip
    ]
    return Validator(
        dev=data.corpus.dev,
        dev_batches=data.dev_batches,
        make_batch=data.make_dev_batch,
        dev_src_texts=data.corpus.dev_src_texts,
        dev_ref_texts=data.corpus.dev_ref_texts,
        src_tokenizer=src_tokenizer,
        tgt_tokenizer=tgt_tokenizer,
        loss_fn=loss_fn,
        device=device,
        precision=precision,
        search=search,
        max_tokens=command.max_tokens,
        compute_bleu=command.validate_bleu,
        max_sentences=command.validate_max_sentences,
        n_samples=command.sample_translations,
        attention_plot=command.attention_plot and has_cross_attention,  # a decoder-only model has none
        directions=directions,
    )


def write_summary(
    run_dir: Path,
    cfg: DictConfig,
    state: Any,
    n_params: int,
    reporter: Reporter,
    finished: dict[str, Any] | None = None,
    directions: Sequence[str] = (),
) -> None:
    """summary.json: what a sweep report and the quickstart read back; `finished`: finish_run's parts;
    `directions`: a multilingual run's dev directions (en-es, ...), whose scores it lists apart."""
    overrides = list(HydraConfig.get().overrides.task)
    finished = finished or {}
    final = finished.get("final")
    summary = {
        "overrides": overrides,
        "best_dev_bleu": state.best_bleu,
        "updates": state.step,
        "epochs": state.epoch,
        "minutes": state.elapsed_seconds / 60,
        "parameters": n_params,  # trained ones (trainer.freeze leaves the others as they are)
        "tokens_per_second": reporter.mean_tokens_per_second,
        "threads": torch.get_num_threads(),
        "nonfinite_skipped": state.nonfinite_skipped,
        "history": state.history,
        # the checkpoint to translate: the final choice with averaging, else best.pt
        "checkpoint": final["checkpoint"] if final else str(run_dir / "best.pt"),
        # with averaging (else null): averaged.pt's whole-dev-set scores, or last.pt's ("averaged": false)
        # when too few weights were kept to average; the steps, the pairs
        "averaged": finished.get("averaged"),
        # with averaging: the average (or last.pt) or best.pt, the higher whole-dev-set BLEU; both scores.
        # Its BLEU is the run's objective
        "final": final,
        # trainer.tune_decoding: the decoding settings stored in the chosen checkpoint, how they were chosen
        "decoding": finished.get("decoding"),
        "finish_seconds": finished.get("finish_seconds"),  # averaging, choosing and tuning
        # a multilingual run's (else null): each dev direction's BLEU/chrF where the objective was measured
        # (the final choice's whole dev set, else the best validation); the objective is their mean
        "dev_directions": (direction_scores(objective_record(final, state), directions) if directions
                           else None),  # fmt: skip
    }
    with atomic_output(run_dir / "summary.json", "w", encoding="utf-8") as handle:
        handle.write(json.dumps(summary, indent=2))
    log.info(
        "done: %d updates in %.1f minutes; best dev BLEU %s; checkpoints in %s",
        state.step,
        state.elapsed_seconds / 60,
        "n/a" if state.best_bleu is None else f"{state.best_bleu:.2f}",
        run_dir,
    )


def objective_record(final: dict[str, Any] | None, state: Any) -> dict[str, Any]:
    """The scores the run's objective comes from: the final choice's record, else the (last) validation
    that reached the best dev BLEU; {} when there is none."""
    if final:
        candidates = final.get("candidates", {}).values()
        chosen = [r for r in candidates if r.get("checkpoint") == final["checkpoint"]]
        if chosen:
            return chosen[0]
    best = [r for r in state.history if state.best_bleu is not None and r.get("bleu") == state.best_bleu]
    return best[-1] if best else {}


def direction_scores(record: dict[str, Any], directions: Sequence[str]) -> dict[str, dict[str, float]]:
    """{"en-es": {"bleu": ..., "chrf": ...}, ...} from a validation record's per-direction keys."""
    return {
        name: {metric: record[direction_key(metric, name)] for metric in ("bleu", "chrf")
               if direction_key(metric, name) in record}
        for name in directions
    }  # fmt: skip


@accept_deprecated_keys(DEPRECATED_DATA_KEYS)
@hydra.main(version_base="1.3", config_path=config_dir(), config_name="train")
def main(cfg: DictConfig) -> float | None:
    return train(cfg)


if __name__ == "__main__":
    from seq2seq.cli.train import main as main_of_module  # importable by name: launchers pickle the job

    main_of_module()

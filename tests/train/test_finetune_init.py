"""init_from: a fine-tuning run's starting checkpoint. Its model is rebuilt with the very weights saved,
its tokenizer bytes are taken as they are, settings that contradict it are one-line errors naming the
key, and the run's fingerprint holds the checkpoint's content hash."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from tiny_models import TINY, save_tiny_checkpoint, tiny_decoder_only, tiny_model, tiny_tokenizer

from seq2seq.checkpoint import save_checkpoint
from seq2seq.cli.config.finetuning import apply_starting_point, chosen_keys, command_line_keys, init_from_path
from seq2seq.cli.config.guided_alignment import check_guided_alignment
from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.resolvers import register_resolvers
from seq2seq.cli.config.schemas import register_schemas
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import UserError
from seq2seq.model import build_encoder_only
from seq2seq.model.builders import RUN_TIME_ARGUMENTS
from seq2seq.model.families import ENCODER_DECODER
from seq2seq.train.fingerprint import differences, run_fingerprint
from seq2seq.train.init_from import (
    TRAINING_ONLY_KEYS,
    build_starting_model,
    model_settings,
    read_starting_point,
)

register_schemas()
register_resolvers()


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


@pytest.fixture
def checkpoint(tmp_path: Path, tokenizer: Tokenizer) -> Path:
    """A tiny encoder-decoder with dropout 0.2 (the training-only key its run set) and random weights."""
    model = tiny_model(tokenizer.vocab_size, seed=3, dropout=0.2)
    return save_tiny_checkpoint(tmp_path / "start.pt", model, tokenizer, step=7)


def error(path_or_call) -> str:
    with pytest.raises(UserError) as caught:
        path_or_call()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_starting_model_has_the_checkpoints_exact_weights(checkpoint: Path) -> None:
    start = read_starting_point(checkpoint)
    saved = torch.load(checkpoint, weights_only=True)
    settings = model_settings(
        start, {"_target_": "seq2seq.model.build_model", "d_model": 256}, explicit=set()
    )
    model = build_starting_model(start, settings)
    assert model.state_dict().keys() == saved["model"].keys()
    assert all(torch.equal(model.state_dict()[key], value) for key, value in saved["model"].items())
    assert model.config == saved["model_config"] and settings["dropout"] == 0.2  # the checkpoint's
    assert settings["d_model"] == TINY["d_model"]  # the run's default (not chosen) gives way
    assert start.family == "encoder_decoder" and start.joint


def test_training_only_settings_the_run_chooses_are_the_runs(checkpoint: Path) -> None:
    start = read_starting_point(checkpoint)
    chosen = {"dropout": 0.3, "attention_backend": "manual", "checkpoint_activations": True}
    settings = model_settings(
        start, {"_target_": "seq2seq.model.build_model", **chosen}, explicit=set(chosen)
    )
    model = build_starting_model(start, settings)
    assert {key: model.config[key] for key in chosen} == chosen
    saved = torch.load(checkpoint, weights_only=True)["model"]
    assert all(torch.equal(model.state_dict()[key], value) for key, value in saved.items())
    assert set(chosen) <= set(TRAINING_ONLY_KEYS)


@pytest.mark.parametrize(
    ("composed", "message"),
    [
        ({"d_model": 128, "ffn_dim": 8}, "model.d_model=128 (the checkpoint's: 64), model.ffn_dim=8"),
        ({"prefix_lm": True}, "model.prefix_lm=True (the checkpoint's: no such setting)"),
        ({"_target_": "seq2seq.model.build_decoder_only"}, "builds another family"),
    ],
)
def test_architecture_the_run_chooses_must_be_the_checkpoints(checkpoint: Path, composed, message) -> None:
    start = read_starting_point(checkpoint)
    line = error(lambda: model_settings(start, composed, explicit=set(composed)))
    assert message in line and f"init_from={checkpoint}" in line
    same = {"d_model": TINY["d_model"], "_target_": "seq2seq.model.builders.build_model"}
    assert model_settings(start, same, explicit=set(same))["d_model"] == TINY["d_model"]  # agreeing: fine


def test_a_decoder_only_checkpoint_gives_a_decoder_only_run(tmp_path: Path, tokenizer: Tokenizer) -> None:
    path = save_tiny_checkpoint(
        tmp_path / "lm.pt", tiny_decoder_only(tokenizer.vocab_size), tokenizer, step=1
    )
    start = read_starting_point(path)
    settings = model_settings(
        start, {"_target_": "seq2seq.model.build_model", "encoder_layers": 3}, explicit=()
    )
    assert settings["_target_"] == "seq2seq.model.build_decoder_only" and "encoder_layers" not in settings
    model = build_starting_model(start, settings)
    assert model.family == "decoder_only"


def refused_files(tmp_path: Path, tokenizer: Tokenizer) -> dict[str, tuple[Path, str]]:
    """name -> (a file init_from refuses, what its one-line error says)."""
    text = tmp_path / "notes.pt"
    text.write_text("not a checkpoint")
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    qe = build_encoder_only(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                            d_model=16, n_heads=2, ffn_dim=32, layers=1)  # fmt: skip
    no_tokenizer = tmp_path / "no_tokenizer.pt"
    model = tiny_model(tokenizer.vocab_size)
    save_checkpoint(no_tokenizer, {"model": model.state_dict(), "model_config": model.config})
    missing_weight = tmp_path / "missing_weight.pt"
    weights = {key: value for key, value in model.state_dict().items() if key != "decoder.final_norm.weight"}
    save_checkpoint(missing_weight, {"model": weights, "model_config": model.config,
                                     "tokenizer": {"src": tokenizer.to_bytes(), "tgt": None}})  # fmt: skip
    return {
        "missing": (tmp_path / "nope.pt", "no such checkpoint file"),
        "text": (text, "is not a checkpoint"),
        "foreign": (foreign, "is not a seq2seq checkpoint"),
        "qe": (save_tiny_checkpoint(tmp_path / "qe.pt", qe, tokenizer, step=1), "quality-estimation"),
        "no_tokenizer": (no_tokenizer, "holds no tokenizer"),
        "missing_weight": (missing_weight, "missing decoder.final_norm.weight"),
    }


@pytest.mark.parametrize("name", ["missing", "text", "foreign", "qe", "no_tokenizer", "missing_weight"])
def test_what_is_not_a_translation_checkpoint_is_a_one_line_error(tmp_path: Path, tokenizer, name) -> None:
    path, message = refused_files(tmp_path, tokenizer)[name]

    def start_from() -> None:
        start = read_starting_point(path)
        build_starting_model(start, model_settings(start, {}, explicit=()))

    line = error(start_from)
    assert message in line and line.startswith("init_from") and str(path) in line, line


def test_separate_tokenizers_are_taken_byte_for_byte(tmp_path: Path, tokenizer: Tokenizer) -> None:
    other = Tokenizer.train(["el rey ve la luz", "la noche y el dia"] * 50, vocab_size=40)
    model = tiny_model(tokenizer.vocab_size, share_embeddings=False)
    path = tmp_path / "pair.pt"
    save_checkpoint(path, {"model": model.state_dict(), "model_config": model.config,
                           "tokenizer": {"src": tokenizer.to_bytes(), "tgt": other.to_bytes()}})  # fmt: skip
    start = read_starting_point(path)
    assert not start.joint
    assert start.src_tokenizer.to_bytes() == tokenizer.to_bytes()
    assert start.tgt_tokenizer.to_bytes() == other.to_bytes()
    assert start.tokenizers.origin == str(path)


# ---------------------------------------------------------------------------------------------- the config
def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("train", overrides=list(overrides))


def applied(checkpoint: Path, *overrides: str):
    """The run's config after apply_starting_point, as seq2seq-train would hold it for `overrides`."""
    cfg = compose_train(f"init_from={checkpoint}", *overrides)
    start = read_starting_point(checkpoint)
    apply_starting_point(cfg, start, default=compose_train(), named=command_line_keys(overrides))
    return cfg


def test_a_plain_run_takes_the_checkpoints_architecture(checkpoint: Path) -> None:
    cfg = applied(checkpoint, "model.dropout=0.25")
    saved = torch.load(checkpoint, weights_only=True)["model_config"]
    model = OmegaConf.to_container(cfg.model, resolve=True)
    assert model.pop("_target_") == "seq2seq.model.build_model"
    architecture = {key: value for key, value in saved.items() if key not in ("family", *RUN_TIME_ARGUMENTS)}
    assert model == {**architecture, "dropout": 0.25}
    assert cfg.schedule.d_model == TINY["d_model"]  # noam reads the model's width: the checkpoint's


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["model.d_model=32"], "model.d_model=32 (the checkpoint's: 64)"),
        (["model=small"], "model.d_model=256 (the checkpoint's: 64)"),  # a model choice names its keys
        # an experiment's model settings count (its d_model is the default's: not a choice)
        (["experiment=search_10min_best"], "model.ffn_dim=512 (the checkpoint's: 256)"),
        (["model=decoder_only_tiny"], "builds another family"),
        (["data.tokenizer.vocab_size=60"], "data.tokenizer.vocab_size=60: init_from="),
        (["data.tokenizer.joint=true"], "data.tokenizer.joint=True"),  # the default value, but named
    ],
)
def test_settings_that_contradict_the_checkpoint_are_refused(checkpoint: Path, overrides, message) -> None:
    assert message in error(lambda: applied(checkpoint, *overrides))


def test_a_model_choice_that_agrees_with_the_checkpoint_is_fine(checkpoint: Path) -> None:
    cfg = applied(checkpoint, "model=tiny", "model/attention=manual")
    assert cfg.model.attention_backend == "manual" and cfg.model.dropout == 0.1  # both chosen by the run


def test_the_alignment_head_is_the_checkpoints_unless_the_run_names_one(
    checkpoint: Path, tokenizer: Tokenizer, tmp_path: Path
) -> None:
    """model.alignment_layer / alignment_head name the head guided alignment trains and alignment output
    reads; no weight depends on them. A guided checkpoint's head carries over (a null, as model=tiny
    holds, keeps it; it was refused as a clash), a run may name another, and guided alignment from a
    checkpoint without a head gives the model built from it the head it picks (it stayed in the config
    only, and the run stopped at its first batch)."""
    guided_model = tiny_model(tokenizer.vocab_size, alignment_layer=-2, alignment_head=0)
    guided = save_tiny_checkpoint(tmp_path / "guided.pt", guided_model, tokenizer, step=5)

    def head(config) -> tuple:
        return config["alignment_layer"], config["alignment_head"]

    assert head(applied(guided, "model=tiny").model) == (-2, 0)
    assert head(applied(guided, "model.alignment_head=1").model) == (-2, 1)
    assert head(applied(checkpoint, "model.alignment_layer=0", "model.alignment_head=3").model) == (0, 3)
    for start in (guided, checkpoint):
        cfg = applied(start, "data.alignment=true", "loss.alignment_weight=0.5")
        check_guided_alignment(cfg, ENCODER_DECODER)  # as seq2seq-train completes the config
        model = build_starting_model(read_starting_point(start), OmegaConf.to_container(cfg.model))
        assert model.alignment_head_position() == head(model.config) == head(cfg.model) == (-2, 0)
        saved = torch.load(start, weights_only=True)["model"]
        assert all(torch.equal(model.state_dict()[key], value) for key, value in saved.items())


def test_chosen_keys_are_named_or_unlike_the_defaults() -> None:
    named = command_line_keys(
        ["model.dropout=0.3", "+model.extra=1", "~data.tokenizer.seed", "model/positional=rope"]
    )
    assert named == {"model.dropout", "model.extra", "data.tokenizer.seed", "model.positional"}
    composed, default = {"a": 1, "b": 2, "c": 3, "dropout": 0.1}, {"a": 1, "b": 5}
    assert chosen_keys(composed, default, named, "model") == {"b", "c", "dropout"}
    assert chosen_keys(composed, default, {"model"}, "model") == set(composed)  # model=... chooses all


def test_fine_tuning_without_init_from_is_a_one_line_error() -> None:
    cfg = compose_train("experiment=finetune", "model=tiny")
    assert "add init_from=PATH.pt" in error(lambda: init_from_path(cfg, experiment="finetune"))
    assert init_from_path(compose_train()) is None
    with_mandatory = compose_train("init_from=???")
    assert "init_from is not set" in error(lambda: init_from_path(with_mandatory))


def test_the_fingerprint_holds_the_checkpoints_content_and_the_frozen_names(tmp_path: Path) -> None:
    config = OmegaConf.to_container(compose_train("model=tiny"), resolve=True)
    files = {}
    first, second = tmp_path / "a.pt", tmp_path / "b.pt"
    first.write_bytes(b"one checkpoint")
    second.write_bytes(b"another checkpoint")
    plain = run_fingerprint(config, files)
    assert not any(key.startswith(("init_from", "trainer.freeze")) for key in plain["settings"])
    one, other = (
        run_fingerprint(config, files, init_from=first),
        run_fingerprint(config, files, init_from=second),
    )
    assert one["sha256"] != other["sha256"] != plain["sha256"]
    assert [line.split(":")[0] for line in differences(one, other)] == ["init_from.sha256"]
    assert [line.split(":")[0] for line in differences(plain, one)] == ["init_from.sha256"]  # started anew
    frozen = run_fingerprint({**config, "trainer": {**config["trainer"], "freeze": ["encoder.*"]}}, files)
    assert differences(plain, frozen) == ['trainer.freeze: unset → ["encoder.*"]']

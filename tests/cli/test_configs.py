"""Every config in configs/ composes and instantiates; bad values fail at compose time."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.schemas import register_schemas
from seq2seq.cli.train import build_loss, check_family_settings
from seq2seq.cli.config.training_setup import check_targets, model_family
from seq2seq.errors import UserError
from seq2seq.train.schedules import ScheduledLR

CONFIGS = Path(config_dir())
register_schemas()


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


QE_MODELS = [option for option in options("model") if option.startswith("encoder_only")]  # seq2seq-qe-train's


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("train", overrides=list(overrides))


GROUP_CHOICES = (
    [
        (group, option)
        for group in (
            "model/positional",
            "model/attention",
            "optim",
            "schedule",
            "loss",
            "decode",
            "data",
        )
        for option in options(group)
    ]
    + [("model", option) for option in options("model") if option not in QE_MODELS]
    + [("experiment", option) for option in options("experiment")]
)


@pytest.mark.parametrize(("group", "option"), GROUP_CHOICES, ids=lambda x: str(x))
def test_every_option_composes_and_instantiates(group: str, option: str) -> None:
    overrides = [f"{group}={option}"]
    if group != "model":
        overrides.append("model=tiny")
    cfg = compose_train(*overrides)
    check_targets(cfg)
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    if option == "xformers":
        pytest.importorskip("xformers.ops", reason="model/attention=xformers needs the xformers package")
    model = instantiate(cfg.model, src_vocab_size=50, tgt_vocab_size=50, pad_id=0, _convert_="all")
    optimizer = instantiate(cfg.optim)(model)
    scheduler = ScheduledLR(optimizer, instantiate(cfg.schedule))
    hidden = model(torch.tensor([[5, 3]]), torch.tensor([[2, 6]]), project=False)  # (1, 2, D)
    loss = build_loss(cfg.loss, pad_id=0)(hidden, model.output.weight, torch.tensor([[6, 3]]))
    assert torch.isfinite(loss.loss_sum)
    assert scheduler.get_last_lr()[0] > 0


@pytest.mark.parametrize("option", QE_MODELS)
def test_every_qe_model_composes_in_qe_train_and_instantiates(option: str) -> None:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("qe_train", overrides=[f"model={option}", "data_dir=x"])
    check_targets(cfg)
    OmegaConf.to_container(cfg, resolve=True)
    model = instantiate(cfg.model, src_vocab_size=50, tgt_vocab_size=40, pad_id=0, _convert_="all")
    scheduler = ScheduledLR(instantiate(cfg.optim)(model), instantiate(cfg.schedule))
    assert model(torch.tensor([[5, 3]]), torch.tensor([[6, 7, 3]])).shape == (1, 1)
    assert scheduler.get_last_lr()[0] > 0


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("translate", ["checkpoint=x.pt"]),
        ("backtranslate", ["checkpoint=x.pt", "input=mono.es", "output_dir=bt"]),
        ("prepare", []),
        ("import", ["input_dir=x", "output=y.pt"]),
        ("export", ["checkpoint=x.pt", "output_dir=d", "target=huggingface"]),
        ("qe", ["checkpoint=x.pt", "input=a", "hypotheses=b"]),
        ("qe_data", ["output_dir=x", "train_passes=[{checkpoint: a.pt}]", "dev_passes=[{checkpoint: a.pt}]"]),
    ],
)
def test_other_entry_point_configs_compose(name: str, overrides: list[str]) -> None:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(name, overrides=overrides)
    assert OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.parametrize(
    "override",
    [
        "trainer.max_updates=abc",
        "trainer.no_such_key=1",
        "model.window=wide",
        "model.d_model=1.5",
        "trainer.precision=[1]",
    ],
)
def test_bad_values_fail_at_compose_time(override: str) -> None:
    with pytest.raises(ConfigCompositionException):
        compose_train(override)


def test_targets_outside_the_project_are_rejected() -> None:
    cfg = compose_train("model=tiny", "+model.extra={_target_: os.system}")
    with pytest.raises(UserError, match=r"model.extra._target_='os.system' is not allowed"):
        check_targets(cfg)


def test_a_logits_level_loss_target_is_a_one_line_error() -> None:
    cfg = compose_train("loss._target_=seq2seq.train.loss.label_smoothed_nll")
    with pytest.raises(UserError, match=r"must take \(hidden, output_weight, target"):
        build_loss(cfg.loss, pad_id=0)


def test_family_settings_are_one_line_errors_before_any_data_is_read() -> None:
    cases = [
        (("model=decoder_only", "data.tokenizer.joint=false"), "set data.tokenizer.joint=true"),
        (("loss.source_weight=0.1",), "only model=decoder_only has"),
        (("model=decoder_only", "model.prefix_lm=true", "loss.source_weight=0.1"), "needs a causal model"),
    ]
    for overrides, message in cases:
        cfg = compose_train(*overrides)
        with pytest.raises(UserError, match=message):
            check_family_settings(cfg, model_family(cfg.model))
    decoder_only = compose_train("model=decoder_only", "loss.source_weight=0.1")
    assert model_family(decoder_only.model) == "decoder_only"
    check_family_settings(decoder_only, "decoder_only")  # allowed
    assert build_loss(decoder_only.loss, pad_id=0).source_weight == 0.1
    assert model_family(compose_train().model) == "encoder_decoder"


def test_the_configured_losses_take_states_weight_and_target() -> None:
    for option in options("loss"):
        loss_fn = build_loss(compose_train(f"loss={option}").loss, pad_id=0)
        hidden, weight = torch.randn(3, 4), torch.randn(7, 4)
        assert torch.isfinite(loss_fn(hidden, weight, torch.tensor([1, 0, 5])).loss_sum)


def test_the_bible_in_both_directions_names_a_corpus_a_dev_and_a_test_set_per_direction() -> None:
    from seq2seq.cli.config.data_config import dev_corpora, training_corpora

    data = compose_train("data=bible_en_es_both").data
    both = [("en", "es"), ("es", "en")]
    assert [(c.src_lang, c.tgt_lang) for c in training_corpora(data)] == both
    for split in ("dev", "test"):
        sets = dev_corpora(data, split)
        assert [(s.src_lang, s.tgt_lang) for s in sets] == both and [s.label for s in sets] == ["en-es", "es-en"]
        assert [Path(s.src).name for s in sets] == [f"{split}.en", f"{split}.es"]
        assert [Path(s.tgt).name for s in sets] == [f"{split}.es", f"{split}.en"]

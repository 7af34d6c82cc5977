"""The length-ratio filters' names say their unit (data.filter.max_token_ratio: tokens; DropLengthRatio's
max_char_ratio: characters); the old names work for one release with one warning line, and nothing
recorded under them (a cleaned corpus's cache key, a run's settings fingerprint) changes meaning."""

from __future__ import annotations

import copy
import inspect
import logging
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from seq2seq.cli.config.data_config import cleaning_transforms, filter_settings
from seq2seq.data.cleaning import clean_key
from seq2seq.data.pipeline import FilterSettings
from seq2seq.data.renamed_settings import current_fingerprint_settings
from seq2seq.data.transforms import DropLengthRatio
from seq2seq.errors import UserError
from seq2seq.train.fingerprint import CORPUS_FILES, differences, run_fingerprint

DROP = "seq2seq.data.transforms.DropLengthRatio"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]


def test_the_token_ratio_is_read_by_its_new_name_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    config = OmegaConf.create({"max_tokens_per_side": 100, "max_token_ratio": 2.0, "min_tokens_for_ratio": 4})
    with caplog.at_level(logging.WARNING):
        assert filter_settings(config) == FilterSettings(100, 2.0, 4)
    assert warnings_of(caplog) == []


def test_the_old_token_ratio_key_still_works_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    config = OmegaConf.create({"max_tokens_per_side": 100, "max_length_ratio": 2.0})
    with caplog.at_level(logging.WARNING):
        assert filter_settings(config) == FilterSettings(max_tokens_per_side=100, max_token_ratio=2.0)
    assert warnings_of(caplog) == [
        "data.filter.max_length_ratio is deprecated and will stop working in the next release; "
        "use data.filter.max_token_ratio"
    ]


def test_both_names_or_an_unknown_filter_key_is_one_line_naming_the_fix() -> None:
    with pytest.raises(UserError, match="keep max_token_ratio only"):
        filter_settings(OmegaConf.create({"max_length_ratio": 2.0, "max_token_ratio": 3.0}))
    with pytest.raises(UserError, match=r"data.filter has unknown keys \['max_ratio'\]; it takes"):
        filter_settings(OmegaConf.create({"max_ratio": 2.0}))


def test_the_char_ratio_keyword_still_works_by_its_old_name_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        old = DropLengthRatio(max_ratio=2, min_chars=10)
    assert (
        old.max_char_ratio == 2.0
        and old.settings() == DropLengthRatio(max_char_ratio=2, min_chars=10).settings()
    )
    assert warnings_of(caplog) == [
        "DropLengthRatio(max_ratio=) is deprecated and will stop working in the next release; "
        "use DropLengthRatio(max_char_ratio=)"
    ]
    with pytest.raises(UserError, match="pass max_char_ratio= only"):
        DropLengthRatio(max_ratio=2, max_char_ratio=3)


def test_the_moved_pair_filter_target_still_works_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    old = "seq2seq.decode.pair_filter.TranslationScoreFilter"
    config = OmegaConf.create({"transforms": [{"_target_": old}]})  # no checkpoint: it cannot be built
    with caplog.at_level(logging.WARNING), pytest.raises(UserError, match=r"\(seq2seq.inference.pair_filter"):
        cleaning_transforms(config)
    assert warnings_of(caplog) == [
        f"data.transforms[0]: _target_ {old} is deprecated and will stop working in the next release; "
        "use seq2seq.inference.pair_filter.TranslationScoreFilter"
    ]


def test_a_corpus_cleaned_before_the_rename_keeps_its_cache_key(tmp_path: Path) -> None:
    """The key a corpus cleaned with DropLengthRatio(max_ratio=2.0, min_chars=10) got before the rename."""
    src, tgt = tmp_path / "a.en", tmp_path / "a.es"
    src.write_text("the house\n", encoding="utf-8")
    tgt.write_text("la casa\n", encoding="utf-8")
    for transform in (
        DropLengthRatio(max_char_ratio=2.0, min_chars=10),
        DropLengthRatio(max_ratio=2.0, min_chars=10),
    ):
        assert clean_key(src, tgt, [transform], "strict") == "e73ee0682448be3d94af7e57"


def test_fingerprint_settings_recorded_under_old_names_read_as_the_new_ones() -> None:
    moved = "seq2seq.decode.pair_filter.TranslationScoreFilter"
    recorded = {
        "data.filter.max_length_ratio": 3.0, "data.filter.max_tokens_per_side": 256, "seed": 1,
        "data.transforms": [{"_target_": DROP, "max_ratio": 2.5}, {"_target_": moved, "min": 0.1}],
    }  # fmt: skip
    assert current_fingerprint_settings(recorded) == {
        "data.filter.max_token_ratio": 3.0, "data.filter.max_tokens_per_side": 256, "seed": 1,
        "data.transforms": [{"_target_": DROP, "max_char_ratio": 2.5},
                            {"_target_": "seq2seq.inference.pair_filter.TranslationScoreFilter", "min": 0.1}],
    }  # fmt: skip


CONFIG: dict[str, Any] = {
    "model": {"d_model": 64}, "loss": {"epsilon": 0.1}, "optim": {"lr": 0.1}, "schedule": {"warmup": 5},
    "seed": 1, "trainer": {"max_tokens": 400, "update_freq": 1, "clip_norm": 1.0},
    "data": {"src_lang": "en", "tgt_lang": "es", "encoding_errors": "strict", "tokenizer": {"vocab_size": 60},
             "filter": {"max_tokens_per_side": 256, "max_length_ratio": 3.0},
             "transforms": [{"_target_": DROP, "max_ratio": 2.5}]},
}  # fmt: skip


def renamed(config: dict[str, Any], *, token_ratio: float = 3.0, char_ratio: float = 2.5) -> dict[str, Any]:
    config = copy.deepcopy(config)
    config["data"]["filter"] = {"max_tokens_per_side": 256, "max_token_ratio": token_ratio}
    config["data"]["transforms"] = [{"_target_": DROP, "max_char_ratio": char_ratio}]
    return config


FINGERPRINT_CHANGE = (
    "needs seq2seq/train/fingerprint.py to read settings through "
    "seq2seq.data.renamed_settings.current_fingerprint_settings (engineer D's report)"
)


def test_a_run_is_neither_refused_nor_changed_by_spelling_a_setting_the_new_way(tmp_path: Path) -> None:
    files = {name: tmp_path / name for name in CORPUS_FILES}
    for path in files.values():
        path.write_text("the dog\n", encoding="utf-8")
    old, new = run_fingerprint(CONFIG, files), run_fingerprint(renamed(CONFIG), files)
    assert old["sha256"] == new["sha256"] and differences(old, new) == []
    recorded = {"settings": {**new["settings"], "data.filter.max_length_ratio": 3.0}}  # a checkpoint's
    del recorded["settings"]["data.filter.max_token_ratio"]
    assert differences(recorded, new) == []
    stricter = run_fingerprint(renamed(CONFIG, token_ratio=2.0, char_ratio=2.0), files)
    assert [line.split(":")[0] for line in differences(recorded, stricter)] == [
        "data.filter.max_token_ratio",
        "data.transforms",
    ]


def test_the_old_token_ratio_key_on_the_command_line_composes_as_the_new_one() -> None:
    """seq2seq-prepare and seq2seq-train rewrite the old override before Hydra composes (which would
    refuse an unknown key), so `data.filter.max_length_ratio=2` sets max_token_ratio."""
    from hydra import compose, initialize_config_dir

    from seq2seq.cli import prepare, train
    from seq2seq.cli.config.data_config import DEPRECATED_DATA_KEYS
    from seq2seq.cli.config.launch import config_dir
    from seq2seq.cli.config.renamed_keys import deprecated_key_overrides

    overrides, used = deprecated_key_overrides(["data.filter.max_length_ratio=2"], DEPRECATED_DATA_KEYS)
    assert used == ["data.filter.max_length_ratio"]
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    assert cfg.data.filter.max_token_ratio == 2 and "max_length_ratio" not in cfg.data.filter
    for command in (prepare, train):  # both entry points apply the rewrite before Hydra's
        source = inspect.getsource(command)
        assert "@accept_deprecated_keys(DEPRECATED_DATA_KEYS)\n@hydra.main(" in source

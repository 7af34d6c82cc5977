"""The settings fingerprint that identifies a run: which keys may change on resume, which are named when
they differ, and the corpus counted by content."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from seq2seq.errors import UserError
from seq2seq.train.fingerprint import CORPUS_FILES, check_same_run, differences, run_fingerprint

CONFIG: dict[str, Any] = {
    "model": {"_target_": "seq2seq.model.build_model", "d_model": 64, "attention_backend": "sdpa",
              "checkpoint_activations": False},
    "loss": {"epsilon": 0.1}, "optim": {"lr": 0.0, "betas": [0.9, 0.98]}, "schedule": {"warmup": 500},
    "seed": 1, "decode": {"beam_size": 1}, "run_name": "a",
    "data": {"dir": "corpus", "src_lang": "en", "tgt_lang": "es", "encoding_errors": "strict",
             "filter": {"max_tokens_per_side": 256}, "tokenizer": {"vocab_size": 60}, "workers": None},
    "trainer": {"max_tokens": 400, "update_freq": 1, "clip_norm": 1.0, "max_updates": 4, "max_minutes": None,
                "validate_every": 2, "save_every": 2, "keep_last": 5, "device": "auto"},
}  # fmt: skip


def corpus(directory: Path, text: str = "the dog\n") -> dict[str, Path]:
    directory.mkdir(exist_ok=True)
    files = {name: directory / name for name in CORPUS_FILES}
    for path in files.values():
        path.write_text(text, encoding="utf-8")
    return files


def changed(key: str, value: Any) -> dict[str, Any]:
    config = copy.deepcopy(CONFIG)
    section, name = key.split(".")
    config[section][name] = value
    return config


@pytest.mark.parametrize(
    "key, value",
    [("trainer.max_updates", 8), ("trainer.max_minutes", 30.0), ("trainer.validate_every", 5),
     ("trainer.save_every", 150), ("trainer.keep_last", 9), ("trainer.device", "cpu"),
     ("model.attention_backend", "manual"), ("model.checkpoint_activations", True), ("data.dir", "elsewhere"),
     ("data.workers", 4), ("decode.beam_size", 5)],
)  # fmt: skip
def test_settings_that_may_change_on_resume_keep_the_fingerprint(
    tmp_path: Path, key: str, value: Any
) -> None:
    files = corpus(tmp_path / "corpus")
    assert run_fingerprint(changed(key, value), files) == run_fingerprint(CONFIG, files)


@pytest.mark.parametrize(
    "key, value, shown",
    [("model.d_model", 32, "model.d_model: 64 → 32"), ("schedule.warmup", 600, "schedule.warmup: 500 → 600"),
     ("optim.betas", [0.9, 0.99], "optim.betas: [0.9, 0.98] → [0.9, 0.99]"),
     ("data.tgt_lang", "de", "data.tgt_lang: es → de"),
     ("trainer.max_tokens", 800, "trainer.max_tokens: 400 → 800"),
     ("data.filter", {"max_tokens_per_side": 100}, "data.filter.max_tokens_per_side: 256 → 100")],
)  # fmt: skip
def test_settings_that_define_the_model_or_data_are_named_when_they_differ(
    tmp_path: Path, key: str, value: Any, shown: str
) -> None:
    files = corpus(tmp_path / "corpus")
    saved, current = run_fingerprint(CONFIG, files), run_fingerprint(changed(key, value), files)
    assert saved["sha256"] != current["sha256"] and differences(saved, current) == [shown]
    with pytest.raises(UserError, match="run_name") as error:
        check_same_run(Path("last.pt"), saved, current)
    assert shown in str(error.value)


def test_the_corpus_counts_by_content_not_by_path(tmp_path: Path) -> None:
    saved = run_fingerprint(CONFIG, corpus(tmp_path / "a"))
    assert run_fingerprint(CONFIG, corpus(tmp_path / "b")) == saved  # the same text elsewhere
    (line,) = differences(saved, run_fingerprint(CONFIG, corpus(tmp_path / "c", "the cat\n")))[:1]
    assert line.startswith("data.dev.src.sha256: ") and "→" in line


def test_keys_a_checkpoint_predates_are_not_differences(tmp_path: Path) -> None:
    current = run_fingerprint(CONFIG, corpus(tmp_path / "corpus"))
    older = {"settings": {k: v for k, v in current["settings"].items() if k != "model.d_model"}}
    assert differences(older, current) == []
    check_same_run(Path("last.pt"), older, current)
    check_same_run(Path("last.pt"), None, current)  # no fingerprint at all: a warning, not an error


def test_extra_corpora_and_transforms_define_the_run(tmp_path: Path) -> None:
    files = corpus(tmp_path / "corpus")
    synthetic = tmp_path / "bt.en"
    synthetic.write_text("a dog\n", encoding="utf-8")
    plain = run_fingerprint(CONFIG, files)
    assert not any(key.startswith(("data.train_mixing", "data.transforms")) for key in plain["settings"])
    bt = {"src": str(synthetic), "tgt": str(synthetic), "tag": "<bt>", "weight": 1.0, "noise": None}
    mixed = changed("data.extra_train", [bt])
    with_bt = run_fingerprint(
        mixed, {**files, "extra_train[0].src": synthetic, "extra_train[0].tgt": synthetic}
    )
    assert "data.extra_train[0].src.sha256" in with_bt["settings"] and with_bt["sha256"] != plain["sha256"]
    heavier = changed("data.extra_train", [{**bt, "weight": 2.0}])
    reweighted = run_fingerprint(heavier, {**files, "extra_train[0].src": synthetic,
                                           "extra_train[0].tgt": synthetic})  # fmt: skip
    (line,) = differences(with_bt, reweighted)
    assert line.startswith("data.train_mixing: [{}, {") and line.endswith('"weight": 2.0}]')
    cleaning = [{"_target_": "seq2seq.data.transforms.DropLengthRatio", "max_char_ratio": 2.5}]
    cleaned, stricter = (
        changed("data.transforms", cleaning),
        changed("data.transforms", [{**cleaning[0], "max_char_ratio": 2.0}]),
    )
    assert differences(run_fingerprint(cleaned, files), run_fingerprint(stricter, files)) == [
        "data.transforms: " + _json(cleaning) + " → " + _json([{**cleaning[0], "max_char_ratio": 2.0}])
    ]


@pytest.mark.parametrize(
    "key, value, shown",
    [("data.train", {"weight": 3}, 'data.train_mixing: unset → [{"weight": 3}]'),
     ("data.train", {"noise": {"drop": 0.1}}, 'data.train_mixing: unset → [{"noise": {"drop": 0.1}}]'),
     ("data.transforms", [{"_target_": "seq2seq.data.transforms.DropLengthRatio"}],
      'data.transforms: unset → [{"_target_": "seq2seq.data.transforms.DropLengthRatio"}]')],
)  # fmt: skip
def test_a_weight_noise_or_transform_set_or_removed_on_resume_is_a_difference(
    tmp_path: Path, key: str, value: Any, shown: str
) -> None:
    """These keys are in a fingerprint only when used (so an older checkpoint's stays the same): their
    absence means "none", and setting or removing one on resume changes the training data."""
    files = corpus(tmp_path / "corpus")
    plain, used = run_fingerprint(CONFIG, files), run_fingerprint(changed(key, value), files)
    assert differences(plain, used) == [shown]
    old, new = shown.split(": ", 1)[1].split(" → ")
    assert differences(used, plain) == [f"{shown.split(':')[0]}: {new} → {old}"]
    for saved, current in ((plain, used), (used, plain)):
        with pytest.raises(UserError, match=shown.split(":")[0]):
            check_same_run(Path("last.pt"), saved, current)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def test_a_multilingual_corpus_changing_its_language_changes_the_fingerprint(tmp_path: Path) -> None:
    """Resuming a multilingual run whose corpus now names another language is refused: the languages
    decide which tokens start its pairs."""
    files = corpus(tmp_path / "corpus")
    config = changed("data.train", [{"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "es"},
                                    {"src": "b", "tgt": "a", "src_lang": "es", "tgt_lang": "en"}])  # fmt: skip
    other = copy.deepcopy(config)
    other["data"]["train"][1]["tgt_lang"] = "fr"
    saved, current = run_fingerprint(config, files), run_fingerprint(other, files)
    assert saved["sha256"] != current["sha256"]
    assert any("tgt_lang" in line and "fr" in line for line in differences(saved, current))
    assert run_fingerprint(CONFIG, files)["settings"].keys().isdisjoint({"data.train_mixing"})  # one pair: as before

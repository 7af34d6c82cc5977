"""Format version 1 -> 2: old checkpoints' model settings get the new names and rebuild the same model.
Version 2 -> 3: the tuned decoding record's key `decoding` becomes `tuned_decoding`, the same record.

A version-1 file is written here the way version 1 wrote it (torch.save of a payload whose
model_config has `attention` and `tie_embeddings`), with the weights of a model built under the
sharing version 1 chose for those settings; nothing binary is checked in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import TINY
from tuned_model import TUNED, write_checkpoint

from seq2seq.checkpoint import FORMAT_VERSION, load_checkpoint, migrate, save_checkpoint
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.tuned_decoding import TunedDecoding
from seq2seq.inference.loading import load_for_inference
from seq2seq.model import Seq2Seq, build_model, count_parameters

TINY_SETTINGS = dict(pad_id=0, **TINY, dropout=0.0)


def version_1_settings(src_vocab: int, tgt_vocab: int, *, tie: bool) -> dict[str, Any]:
    """The model_config version 1 saved: build_model's arguments under their old names."""
    return {
        "src_vocab_size": src_vocab,
        "tgt_vocab_size": tgt_vocab,
        **TINY_SETTINGS,
        "positional": "rope",
        "attention": "manual",
        "tie_embeddings": tie,
        "max_positions": 64,
    }


def model_as_version_1_built_it(settings: dict[str, Any]) -> Seq2Seq:
    """tie_embeddings tied decoder input and output, and the encoder input when the sizes were equal."""
    new = {key: value for key, value in settings.items() if key not in ("attention", "tie_embeddings")}
    tie, equal = settings["tie_embeddings"], settings["src_vocab_size"] == settings["tgt_vocab_size"]
    torch.manual_seed(0)
    return build_model(
        **new,
        attention_backend=settings["attention"],
        share_embeddings=tie and equal,
        share_decoder_output=tie,
    ).eval()


def write_version_1(path: Path, model: Seq2Seq, settings: dict[str, Any], *, with_run_config: bool) -> None:
    payload: dict[str, Any] = {"format_version": 1, "model": model.state_dict(), "model_config": settings}
    if with_run_config:
        model_section = {key: settings[key] for key in ("d_model", "attention", "tie_embeddings")}
        payload["config"] = {"model": {"_target_": "seq2seq.model.build_model", **model_section}, "seed": 1}
    torch.save(payload, path)


def shared_groups(model: Seq2Seq) -> list[list[str]]:
    """Which named parameters are one tensor (shared embeddings), as sorted name lists."""
    by_storage: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        by_storage.setdefault(id(tensor), []).append(name)
    return sorted(sorted(names) for names in by_storage.values() if len(names) > 1)


CASES = {
    "tied joint vocabulary": (29, 29, True),
    "tied, different sizes": (31, 29, True),
    "untied joint vocabulary": (29, 29, False),
}


@pytest.mark.parametrize("case", CASES)
def test_a_version_1_checkpoint_rebuilds_the_same_model(tmp_path: Path, case: str) -> None:
    src_vocab, tgt_vocab, tie = CASES[case]
    settings = version_1_settings(src_vocab, tgt_vocab, tie=tie)
    old = model_as_version_1_built_it(settings)
    path = tmp_path / "old.pt"
    write_version_1(path, old, settings, with_run_config=True)

    payload = load_checkpoint(path)
    assert payload["format_version"] == FORMAT_VERSION == 4
    config = payload["model_config"]
    assert "attention" not in config and "tie_embeddings" not in config
    assert config["attention_backend"] == "manual"
    assert config["share_decoder_output"] is tie
    assert config["share_embeddings"] is (tie and src_vocab == tgt_vocab)
    run_model = payload["config"]["model"]
    assert run_model["attention_backend"] == "manual" and "tie_embeddings" not in run_model
    assert (run_model["share_embeddings"], run_model["share_decoder_output"]) == (
        config["share_embeddings"],
        config["share_decoder_output"],
    )

    torch.manual_seed(1)  # other initial weights: everything must come from the file
    rebuilt = build_model(**config).eval()
    rebuilt.load_state_dict(payload["model"])
    assert shared_groups(rebuilt) == shared_groups(old)
    assert count_parameters(rebuilt) == count_parameters(old)

    generator = torch.Generator().manual_seed(3)
    src = torch.randint(4, src_vocab, (3, 7), generator=generator)
    src[1, 5:] = 0
    tgt_in = torch.randint(4, tgt_vocab, (3, 6), generator=generator)
    with torch.no_grad():
        assert torch.equal(rebuilt(src, tgt_in), old(src, tgt_in))
    expected, got = greedy_search(old, src), greedy_search(rebuilt, src)
    assert [h.tokens for h in got] == [h.tokens for h in expected]
    assert [h.score for h in got] == [h.score for h in expected]


def test_the_migration_keeps_everything_else_and_does_not_touch_its_input() -> None:
    settings = version_1_settings(29, 29, tie=True)
    old = {"format_version": 1, "model_config": settings, "step": 7, "config": {"seed": 1}}
    new = migrate(old)
    assert settings["attention"] == "manual" and settings["tie_embeddings"] is True  # input intact
    assert list(new["model_config"]) == [
        *["src_vocab_size", "tgt_vocab_size", *TINY_SETTINGS, "positional"],
        *["attention_backend", "share_embeddings", "share_decoder_output", "max_positions"],
    ]
    assert new["step"] == 7 and new["config"] == {"seed": 1} and new["format_version"] == FORMAT_VERSION
    assert migrate({"format_version": 1, "step": 2}) == {"format_version": FORMAT_VERSION, "step": 2}


def test_version_2s_decoding_record_becomes_the_tuned_decoding() -> None:
    old = {"format_version": 2, "step": 2, "decoding": TUNED}
    assert migrate(old) == {"format_version": FORMAT_VERSION, "step": 2, "tuned_decoding": TUNED}
    assert old["decoding"] == TUNED  # input intact
    assert migrate({"format_version": 2, "step": 2}) == {"format_version": FORMAT_VERSION, "step": 2}


def test_a_checkpoint_with_the_old_key_loads_the_same_tuned_decoding(tmp_path: Path) -> None:
    """Saved by version 2 (`decoding`) or now (`tuned_decoding`): the model comes with the same settings."""
    now = write_checkpoint(tmp_path / "now.pt", decoding=None)
    payload = load_checkpoint(now)
    save_checkpoint(now, {**payload, "tuned_decoding": TUNED})
    torch.save({**payload, "format_version": 2, "decoding": TUNED}, tmp_path / "old.pt")
    old, new = (load_for_inference(tmp_path / name, torch.device("cpu")) for name in ("old.pt", "now.pt"))
    assert old.tuned_decoding == new.tuned_decoding == TUNED
    values = [TunedDecoding.read(loaded.tuned_decoding, "here").values for loaded in (old, new)]
    assert values[0] == values[1] == TUNED["values"]

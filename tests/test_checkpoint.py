"""Checkpoint file format: atomic writes, one-line errors for bad files, migration, rotation, RNG state."""

from __future__ import annotations

import collections
import os
import random

import numpy as np
import pytest
import torch
from torch import nn

from seq2seq import checkpoint
from seq2seq.checkpoint import (
    FORMAT_VERSION,
    load_checkpoint,
    migrate,
    rotate_checkpoints,
    save_checkpoint,
)
from seq2seq.errors import UserError
from seq2seq.train.optim import build_adamw
from seq2seq.train.rng import rng_state, set_rng_state


def _payload() -> dict:
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5))
    optimizer = build_adamw(model, lr=1e-3, weight_decay=0.1)
    model(torch.tensor([[1, 2]])).sum().backward()
    optimizer.step()
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "tokenizer": bytes(range(256)) * 4,  # e.g. a serialized sentencepiece model
        "config": {"model": {"d_model": 3, "layers": [1, 2]}, "lr": 1e-3, "name": "tiny", "none": None},
        "step": 7,
        "rng": rng_state(),
        "meta": {"shape": torch.Size([2, 3]), "dtype": torch.bfloat16, "device": torch.device("cpu")},
    }


def _assert_same(a, b) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    else:
        assert a == b and type(a) is type(b)


def test_round_trip_and_no_temp_files(tmp_path):
    payload = _payload()
    path = tmp_path / "run" / "checkpoint_7.pt"
    save_checkpoint(path, payload)
    assert os.listdir(path.parent) == ["checkpoint_7.pt"]
    loaded = load_checkpoint(path)
    assert loaded.pop("format_version") == FORMAT_VERSION
    _assert_same(payload, loaded)
    assert "format_version" not in payload  # the caller's dict is left alone

    save_checkpoint(path, {**payload, "step": 8})  # overwrite in place
    assert os.listdir(path.parent) == ["checkpoint_7.pt"]
    assert load_checkpoint(path)["step"] == 8


def test_a_mapped_read_gives_the_same_payload(tmp_path):
    """mmap=True (inference: the optimizer state is never read from disk) loses nothing."""
    payload = _payload()
    path = tmp_path / "checkpoint_7.pt"
    save_checkpoint(path, payload)
    mapped = load_checkpoint(path, mmap=True)
    assert mapped.pop("format_version") == FORMAT_VERSION
    _assert_same(payload, mapped)


def test_restored_states_resume_training(tmp_path):
    payload = _payload()
    save_checkpoint(tmp_path / "last.pt", payload)
    loaded = load_checkpoint(tmp_path / "last.pt")
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5))
    model.load_state_dict(loaded["model"])
    optimizer = build_adamw(model, lr=1e-3, weight_decay=0.1)
    optimizer.load_state_dict(loaded["optimizer"])
    assert [g["name"] for g in optimizer.param_groups] == ["decay", "no_decay"]


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"step": 1})

    def broken_save(obj, handle):
        handle.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, {"step": 2})
    assert os.listdir(tmp_path) == ["last.pt"]
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 1


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (np.arange(3), "payload['rng']"),
        ({"seed": np.float64(1.0)}, "payload['rng']['seed']"),
        ({1.5: 2}, "payload['rng']"),
        ([object()], "payload['rng'][0]"),
        (collections.namedtuple("Pair", "a b")(1, 2), "payload['rng']"),
    ],
)
def test_values_that_cannot_load_safely_are_refused_at_save(tmp_path, value, where):
    with pytest.raises(TypeError) as info:
        save_checkpoint(tmp_path / "x.pt", {"rng": value})
    assert where in str(info.value)
    assert os.listdir(tmp_path) == []


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(UserError, match="does not exist") as info:
        load_checkpoint(tmp_path / "nope.pt")
    assert str(tmp_path / "nope.pt") in str(info.value)
    with pytest.raises(UserError, match="is a directory"):
        load_checkpoint(tmp_path)


def _assert_one_line_user_error(path, match: str) -> None:
    for mmap in (False, True):  # read whole (training) or mapped (inference)
        with pytest.raises(UserError, match=match) as info:
            load_checkpoint(path, mmap=mmap)
        message = str(info.value)
        assert str(path) in message and "\n" not in message
        assert info.value.__context__ is None or info.value.__suppress_context__  # no chained traceback


@pytest.mark.parametrize("keep_fraction", [0.0, 0.1, 0.5, 0.9])
def test_truncated_file_is_a_user_error(tmp_path, keep_fraction):
    path = tmp_path / "checkpoint_7.pt"
    save_checkpoint(path, _payload())
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep_fraction)])
    _assert_one_line_user_error(path, "corrupt or truncated")


def test_random_bytes_are_a_user_error(tmp_path):
    path = tmp_path / "checkpoint_7.pt"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    _assert_one_line_user_error(path, "corrupt or truncated.*delete it or resume from another checkpoint")


def test_foreign_files_are_user_errors(tmp_path):
    plain = tmp_path / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, plain)
    _assert_one_line_user_error(plain, "not a seq2seq checkpoint")

    not_dict = tmp_path / "list.pt"
    torch.save([1, 2], not_dict)
    _assert_one_line_user_error(not_dict, "not a seq2seq checkpoint")

    pickled = tmp_path / "numpy.pt"
    torch.save({"format_version": 1, "array": np.arange(3)}, pickled)
    _assert_one_line_user_error(pickled, "not written by seq2seq")

    bad_version = tmp_path / "bad_version.pt"
    torch.save({"format_version": "one"}, bad_version)
    _assert_one_line_user_error(bad_version, "invalid format_version")


def test_newer_format_is_a_user_error(tmp_path):
    path = tmp_path / "future.pt"
    torch.save({"format_version": FORMAT_VERSION + 1}, path)
    _assert_one_line_user_error(path, "newer than the supported.*upgrade seq2seq")


def test_migration_chain_upgrades_old_payloads(tmp_path, monkeypatch):
    def rename_model_state(payload: dict) -> dict:
        payload["model"] = payload.pop("model_state")
        return payload

    old = {"format_version": 0, "model_state": {"w": torch.ones(2)}, "step": 3}
    path = tmp_path / "old.pt"
    torch.save(old, path)
    _assert_one_line_user_error(path, "format version 0 cannot be migrated")

    monkeypatch.setitem(checkpoint.MIGRATIONS, 0, rename_model_state)
    loaded = load_checkpoint(path)
    assert loaded["format_version"] == FORMAT_VERSION
    assert torch.equal(loaded["model"]["w"], torch.ones(2)) and "model_state" not in loaded
    assert old["model_state"] is not None  # the input payload is not mutated in place
    current = {"format_version": FORMAT_VERSION, "step": 1}
    assert migrate(current) == current


def test_rotation_keeps_newest_numbered_and_never_last_or_best(tmp_path):
    for step in (5, 10, 999, 1000, 20):
        (tmp_path / f"checkpoint_{step}.pt").write_bytes(b"x")
    for name in ("last.pt", "best.pt", "checkpoint_best.pt", "notes.txt", ".checkpoint_30.pt.abc.tmp"):
        (tmp_path / name).write_bytes(b"x")

    removed = rotate_checkpoints(tmp_path, "checkpoint_{step}.pt", keep=2)
    assert [p.name for p in removed] == ["checkpoint_5.pt", "checkpoint_10.pt", "checkpoint_20.pt"]
    assert sorted(os.listdir(tmp_path)) == sorted(
        [
            ".checkpoint_30.pt.abc.tmp",
            "best.pt",
            "checkpoint_1000.pt",
            "checkpoint_999.pt",
            "checkpoint_best.pt",
            "last.pt",
            "notes.txt",
        ]
    )
    assert rotate_checkpoints(tmp_path, keep=5) == []
    rotate_checkpoints(tmp_path, keep=0)
    assert "last.pt" in os.listdir(tmp_path) and "best.pt" in os.listdir(tmp_path)
    assert not any(n.startswith("checkpoint_") and n[11:-3].isdigit() for n in os.listdir(tmp_path))


def test_rotation_never_deletes_checkpoints_above_the_step_just_saved(tmp_path):
    """Files numbered above the step a run just saved are not that run's: rotation leaves them alone."""
    for step in (2, 4, 6, 9000):
        (tmp_path / f"checkpoint_{step}.pt").write_bytes(b"x")
    removed = rotate_checkpoints(tmp_path, "checkpoint_{step}.pt", keep=2, newest_step=6)
    assert [p.name for p in removed] == ["checkpoint_2.pt"]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint_4.pt", "checkpoint_6.pt", "checkpoint_9000.pt"]


@pytest.mark.parametrize("pattern", ["checkpoint.pt", "{step}_{step}.pt", "sub/checkpoint_{step}.pt"])
def test_rotation_rejects_bad_arguments(tmp_path, pattern):
    with pytest.raises(UserError, match="pattern"):
        rotate_checkpoints(tmp_path, pattern, keep=1)
    with pytest.raises(UserError, match="keep"):
        rotate_checkpoints(tmp_path, keep=-1)


def _draw() -> tuple:
    return (
        [random.random() for _ in range(3)],
        random.gauss(0, 1),
        np.random.rand(3).tolist(),
        float(np.random.randn()),
        torch.rand(3).tolist(),
    )


def test_rng_state_round_trip_through_a_checkpoint(tmp_path):
    _draw()
    save_checkpoint(tmp_path / "rng.pt", {"rng": rng_state()})
    expected = _draw()
    _draw()  # move every generator on
    set_rng_state(load_checkpoint(tmp_path / "rng.pt")["rng"])
    assert _draw() == expected


def test_rng_state_holds_no_numpy_objects():
    state = rng_state()
    assert isinstance(state["numpy"]["keys"], list) and len(state["numpy"]["keys"]) == 624


def test_stale_temporaries_of_an_interrupted_save_are_removed_at_start(tmp_path):
    import os
    import time

    from seq2seq.checkpoint import remove_stale_temporaries

    stale = tmp_path / ".last.pt.abc123.tmp"
    stale.write_bytes(b"half a checkpoint")
    os.utime(stale, (time.time() - 600, time.time() - 600))
    live = tmp_path / ".checkpoint_9.pt.def456.tmp"  # being written right now by this run
    live.write_bytes(b"in progress")
    other = tmp_path / ".notes.tmp"
    other.write_text("not ours")
    os.utime(other, (time.time() - 600, time.time() - 600))
    removed = remove_stale_temporaries(tmp_path, older_than=time.time() - 60)
    assert removed == [stale] and not stale.exists() and live.exists() and other.exists()

"""seq2seq-average: the mean of the newest N checkpoints, newest metadata, tied weights, clean errors."""

from __future__ import annotations

import pytest
import torch
from tiny_models import TINY, tiny_model

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.cli.average import main
from seq2seq.model import build_from_config

VOCAB = 11


def _save(path, step: int, *, seed: int, d_model: int = TINY["d_model"]) -> dict:
    model = tiny_model(VOCAB, seed=seed, d_model=d_model)
    payload = {
        "model": model.state_dict(),
        "model_config": model.config,
        "config": {"run": "test"},
        "tokenizer": {"src": b"spm", "tgt": b"spm"},
        "step": step,
        "optimizer": {"state": {}, "param_groups": []},
    }
    save_checkpoint(path, payload)
    return payload


def test_averages_the_newest_n_by_step_number(tmp_path):
    payloads = {
        step: _save(tmp_path / f"checkpoint_{step}.pt", step, seed=step) for step in (99, 100, 999, 1000)
    }
    (tmp_path / "last.pt").write_bytes(b"ignored")
    out = tmp_path / "avg.pt"
    main(["--inputs", str(tmp_path), "--last", "3", "--output", str(out)])
    averaged = load_checkpoint(out)
    for key, value in averaged["model"].items():
        expected = sum(payloads[s]["model"][key] for s in (100, 999, 1000)) / 3
        torch.testing.assert_close(value, expected)
    assert averaged["step"] == 1000 and averaged["config"] == {"run": "test"}
    assert averaged["tokenizer"] == {"src": b"spm", "tgt": b"spm"} and "optimizer" not in averaged
    assert [p.rsplit("/", 1)[-1] for p in averaged["averaged_from"]] == [
        f"checkpoint_{s}.pt" for s in (100, 999, 1000)
    ]
    model = build_from_config(averaged["model_config"])
    model.load_state_dict(averaged["model"])
    state = averaged["model"]  # tied embeddings are still one tensor
    assert state["decoder.embedding.weight"].data_ptr() == state["output.weight"].data_ptr()


def test_explicit_files_average_all_of_them(tmp_path):
    paths = [tmp_path / f"model_{name}.pt" for name in ("a", "b")]
    payloads = [_save(path, step, seed=step) for step, path in enumerate(paths)]
    out = tmp_path / "avg.pt"
    main(["--inputs", *map(str, paths), "--output", str(out)])
    averaged = load_checkpoint(out)["model"]
    key = "encoder.layers.0.ffn.up.weight"
    torch.testing.assert_close(averaged[key], (payloads[0]["model"][key] + payloads[1]["model"][key]) / 2)


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("shapes", [], f"encoder.embedding.weight is ({VOCAB}, {TINY['d_model']}) in"),
        ("shapes", ["--last", "5"], "--last 5 but"),
        ("empty", [], "holds no checkpoint_{step}.pt files"),
        ("shapes", ["--last", "0"], "--last 0 must be at least 1"),
    ],
)
def test_errors_are_one_line_exit_2(tmp_path, capsys, setup, args, message):
    if setup == "shapes":
        _save(tmp_path / "checkpoint_1.pt", 1, seed=1)
        _save(tmp_path / "checkpoint_2.pt", 2, seed=2, d_model=2 * TINY["d_model"])
    with pytest.raises(SystemExit) as exit_info:
        main(["--inputs", str(tmp_path), *args, "--output", str(tmp_path / "avg.pt")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "avg.pt").exists()


def test_refuses_to_overwrite_an_input(tmp_path, capsys):
    path = tmp_path / "checkpoint_1.pt"
    _save(path, 1, seed=1)
    with pytest.raises(SystemExit):
        main(["--inputs", str(path), "--output", str(path)])
    assert "one of the inputs" in capsys.readouterr().err

"""seq2seq-translate's `device`: on a GPU it writes the CPU's lines; asking for one where there is none
is one error line. The command runs in this process on the config Hydra composes (tests/in_process.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from in_process import translate_lines
from tiny_models import sentences, tiny_model_checkpoint

LINES = sentences(12, seed=21)
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12"]  # random models rarely stop by themselves


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_checkpoint(tmp_path_factory.mktemp("model"), step=1, sharpness=4.0)


def test_cuda_without_a_gpu_is_one_error_line(checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, stderr, output = translate_lines(tmp_path, LINES, f"checkpoint={checkpoint}", "device=cuda")
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert code == 2 and output is None, stderr[-2000:]
    assert errors == ["error: device=cuda but no CUDA device is available; use device=cpu"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="runs the CUDA path; needs a CUDA device")
@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_cuda_writes_the_cpu_lines(checkpoint, tmp_path, decode):
    lines = {}
    for device in ("cpu", "cuda"):
        folder = tmp_path / device
        folder.mkdir()
        code, stderr, lines[device] = translate_lines(
            folder, LINES, f"checkpoint={checkpoint}", f"device={device}", f"decode={decode}", *SHORT
        )
        assert code == 0, stderr[-2000:]
    assert lines["cuda"] == lines["cpu"] and len(lines["cpu"]) == len(LINES)

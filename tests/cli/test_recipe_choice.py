"""The quickstart's recipe follows the detected CPU kind: native bf16 or not, and the cores."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from seq2seq.cli import recipe_choice
from seq2seq.cli.recipe_choice import FP32_RECIPE, choose_recipe

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize(
    ("bf16", "cores", "experiment"),
    [(True, 2, ""), (True, 16, ""), (False, 1, FP32_RECIPE), (False, 2, FP32_RECIPE), (False, 8, "")],
)
def test_the_choice_follows_bf16_and_cores(bf16: bool, cores: int, experiment: str) -> None:
    choice = choose_recipe(bf16_native=bf16, cores=cores)
    assert choice.experiment == experiment and f"{cores} cores" in choice.reason


def test_the_fp32_recipe_exists() -> None:
    assert (CONFIGS / "experiment" / f"{FP32_RECIPE}.yaml").is_file()


@pytest.mark.parametrize(("capability", "expected"), [("AVX512", ""), ("AVX2", FP32_RECIPE)])
def test_main_prints_what_it_detects(monkeypatch, capsys, capability: str, expected: str) -> None:
    """As scripts/quickstart.sh reads it: the experiment, a tab, the reason (2 cores, bf16 present)."""
    monkeypatch.setattr(recipe_choice, "usable_cores", lambda: 2)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    recipe_choice.main()
    experiment, reason = capsys.readouterr().out.rstrip("\n").split("\t")
    assert experiment == expected and "2 cores" in reason

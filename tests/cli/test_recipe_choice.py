"""The quickstart's recipe follows the detected CPU kind: native bf16 or not, and the cores."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from seq2seq.cli.config import recipe_choice
from seq2seq.cli.config.recipe_choice import FP32_RECIPE, choose_recipe

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


QUICKSTART = Path(__file__).resolve().parents[2] / "scripts" / "quickstart.sh"


def _run_recipe_block(tmp_path: Path, env_experiment: str | None, printed_choice: str) -> list[str]:
    """Run scripts/quickstart.sh's recipe block with a stand-in for `python -m seq2seq.cli.config.recipe_choice`."""
    import subprocess

    text = QUICKSTART.read_text()
    block = text[text.index("# recipe choice: begin") : text.index("# recipe choice: end")]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' '{printed_choice}'\n")
    fake.chmod(0o755)
    script = f'set -euo pipefail\nBIN={bin_dir}\n{block}\necho "EXPERIMENT=[$EXPERIMENT]"\n'
    env = {"PATH": "/usr/bin:/bin"}
    if env_experiment is not None:
        env["EXPERIMENT"] = env_experiment
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


@pytest.mark.slow
def test_the_quickstart_uses_the_detected_recipe_and_says_why(tmp_path: Path) -> None:
    lines = _run_recipe_block(tmp_path, None, f"{FP32_RECIPE}\tno native bf16, 2 cores: why")
    assert lines == [
        f"recipe: {FP32_RECIPE} (no native bf16, 2 cores: why); EXPERIMENT=<name> picks another",
        f"EXPERIMENT=[{FP32_RECIPE}]",
    ]


@pytest.mark.slow
def test_the_quickstart_names_the_defaults_when_detection_picks_them(tmp_path: Path) -> None:
    lines = _run_recipe_block(tmp_path, None, "\tnative bf16, 2 cores: the defaults")
    assert lines[0].startswith("recipe: seq2seq-train defaults (native bf16, 2 cores")
    assert lines[1] == "EXPERIMENT=[]"


@pytest.mark.slow
@pytest.mark.parametrize("given", ["tune_30min_best", ""])
def test_an_experiment_given_overrides_the_detection(tmp_path: Path, given: str) -> None:
    lines = _run_recipe_block(tmp_path, given, f"{FP32_RECIPE}\tnot used")
    shown = given or "seq2seq-train defaults"
    assert lines == [f"recipe: {shown} (EXPERIMENT given)", f"EXPERIMENT=[{given}]"]

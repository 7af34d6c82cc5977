"""scripts/padding_waste.py runs end to end on a small corpus and prints one line per budget."""

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "padding_waste.py"


@pytest.mark.slow
def test_script_prints_waste_per_budget(tmp_path):
    rng = random.Random(0)
    words = ["uno", "dos", "tres", "cuatro", "cinco", "seis", "siete"]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 15))) for _ in range(300)]
    for split, part in (("train", lines[:280]), ("dev", lines[280:])):
        (tmp_path / f"{split}.aa").write_text("".join(f"{s}\n" for s in part), encoding="utf-8")
        (tmp_path / f"{split}.bb").write_text("".join(f"{s.upper()}\n" for s in part), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--data-dir", str(tmp_path), "--src", "aa", "--tgt", "bb",
         "--max-tokens", "128", "512", "--vocab-size", "60", "--model-type", "bpe"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    budgets = re.findall(r"max_tokens=\s*(\d+): .* padding\s+([\d.]+)% of batch tokens", result.stdout)
    assert [b for b, _ in budgets] == ["128", "512"]
    assert all(0 <= float(w) < 50 for _, w in budgets)
    assert (tmp_path / "padding_waste" / "spm.model").is_file()

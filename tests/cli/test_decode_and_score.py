"""scripts/decode_and_score.sh: translate, score, and one scores.json with metrics, settings and speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from commands import ENV

SCRIPT = Path(__file__).parents[2] / "scripts" / "decode_and_score.sh"


@pytest.mark.slow
def test_scores_json_has_metrics_signatures_settings_and_speed(
    finished_run: Path, corpus: Path, tmp_path: Path
):
    out = tmp_path / "eval"
    env = {**ENV, "BIN": str(Path(sys.executable).parent)}
    command = [
        "bash",
        str(SCRIPT),
        str(finished_run / "last.pt"),
        str(corpus / "test.en"),
        str(corpus / "test.es"),
        str(out),
        "decode=beam",
        "decode.beam_size=3",
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    scores = json.loads((out / "scores.json").read_text())
    assert set(scores["metrics"]) == {"bleu", "chrf", "ter"}
    assert scores["metrics"]["bleu"]["signature"].startswith("nrefs:1|")
    assert scores["decode"]["beam_size"] == 3 and scores["sentences"] == 20
    assert scores["sentences_per_second"] > 0
    hypotheses = (out / "hypotheses.txt").read_text().split("\n")
    assert len(hypotheses) == 21 and hypotheses[-1] == ""


@pytest.mark.slow
def test_usage_without_arguments() -> None:
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "CHECKPOINT SOURCE REFERENCE OUT_DIR" in result.stderr

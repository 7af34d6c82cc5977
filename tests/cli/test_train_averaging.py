"""trainer.average_last: the run ends by averaging its newest checkpoints into averaged.pt, scores it
on the whole dev set, and that score becomes the run's objective; settings that cannot work are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu
import torch
from conftest import run_module
from toy_corpus import tiny_train_overrides

from seq2seq import Translator
from seq2seq.checkpoint import load_checkpoint
from seq2seq.decode.options import SearchOptions


def test_a_run_ends_with_the_average_of_its_last_checkpoints(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    overrides = [o for o in tiny_train_overrides(corpus, run_dir) if not o.startswith("trainer.max_updates")]
    averaging = ["trainer.max_updates=6", "trainer.average_last=2", "trainer.validate_max_sentences=3"]
    result = run_module("seq2seq.cli.train", *overrides, *averaging, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    averaged = load_checkpoint(run_dir / "averaged.pt")
    newest = [load_checkpoint(run_dir / f"checkpoint_{step}.pt")["model"] for step in (4, 6)]
    for key, value in averaged["model"].items():
        torch.testing.assert_close(value, (newest[0][key] + newest[1][key]) / 2)
    record = json.loads((run_dir / "summary.json").read_text())["averaged"]
    assert record["steps"] == [4, 6] and averaged["averaged_dev"] == record
    # Its dev BLEU is over every dev sentence, as decoding them with averaged.pt gives.
    sources = (corpus / "dev.en").read_text(encoding="utf-8").splitlines()
    references = (corpus / "dev.es").read_text(encoding="utf-8").splitlines()
    hypotheses = Translator.from_checkpoint(run_dir / "averaged.pt", options=SearchOptions()).translate(
        sources
    )
    assert record["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score, abs=1e-6)
    assert "averaged.pt: the mean of 2 checkpoints (updates 4, 6)" in result.stdout + result.stderr


def test_too_few_checkpoints_to_average_is_a_warning_not_a_failure(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"  # 2 updates: one numbered checkpoint, written at the validation of update 2
    overrides = [o for o in tiny_train_overrides(corpus, run_dir) if not o.startswith("trainer.max_updates")]
    result = run_module("seq2seq.cli.train", *overrides, "trainer.max_updates=2", "trainer.average_last=5",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "1 numbered checkpoint(s)" in output and "lower trainer.save_every" in output
    assert not (run_dir / "averaged.pt").exists()
    assert json.loads((run_dir / "summary.json").read_text())["averaged"] is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["trainer.average_last=1"], "trainer.average_last=1 must be at least 2"),
        (["trainer.average_last=3", "trainer.save_every=null"], "set trainer.save_every"),
        (["trainer.average_last=6", "trainer.keep_last=5"], "set trainer.keep_last=6 or more"),
    ],
)
def test_averaging_settings_that_cannot_work_are_one_line_errors(
    corpus: Path, tmp_path: Path, settings: list[str], message: str
) -> None:
    overrides = [
        o for o in tiny_train_overrides(corpus, tmp_path / "run") if not o.startswith("trainer.save_every")
    ]
    if not any(s.startswith("trainer.save_every") for s in settings):
        overrides.append("trainer.save_every=2")
    result = run_module("seq2seq.cli.train", *overrides, *settings, cwd=tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr

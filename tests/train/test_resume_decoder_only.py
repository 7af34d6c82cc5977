"""seq2seq-train model=decoder_only_tiny as a user runs it: a run killed with SIGKILL right after its
checkpoint at update 2 resumes, by the same command, to the very weights and dev scores of a run never
interrupted; and the dev BLEU and chrF it reports equal decoding the dev set with the saved model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu
import torch
from commands import ENV, KILL_AFTER_SAVE, run_module, train_tiny
from toy_corpus import tiny_train_overrides

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.precision import resolve_precision

DECODER_ONLY = "model=decoder_only_tiny"


def decoder_only_overrides(corpus: Path, run_dir: Path) -> list[str]:
    return tiny_train_overrides(corpus, run_dir, DECODER_ONLY)


@pytest.fixture(scope="module")
def straight_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 updates of the tiny decoder-only model, validated at 2 and 4, never interrupted."""
    return train_tiny(corpus, tmp_path_factory.mktemp("straight") / "run", DECODER_ONLY)


def scores(history: list[dict]) -> list[dict]:
    """A summary's validations without their clock times."""
    return [
        {key: value for key, value in record.items() if key not in ("minutes", "seconds")}
        for record in history
    ]


@pytest.mark.slow
def test_a_run_killed_after_a_checkpoint_resumes_bitwise(
    straight_run: Path, corpus: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    overrides = decoder_only_overrides(corpus, run_dir)
    command = [sys.executable, "-c", KILL_AFTER_SAVE, "2", "seq2seq.cli.train", *overrides]
    killed = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert torch.load(run_dir / "last.pt", weights_only=True)["step"] == 2
    assert not (run_dir / "summary.json").exists()  # killed before the end
    resumed = run_module("seq2seq.cli.train", *overrides, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert "resumed from" in log and "at update 2" in log
    ours, theirs = (torch.load(d / "last.pt", weights_only=True) for d in (run_dir, straight_run))
    assert ours["step"] == theirs["step"] == 4 and ours["model_config"]["family"] == "decoder_only"
    assert ours["model"].keys() == theirs["model"].keys()
    assert all(torch.equal(ours["model"][key], theirs["model"][key]) for key in theirs["model"])
    summaries = [json.loads((d / "summary.json").read_text()) for d in (run_dir, straight_run)]
    assert scores(summaries[0]["history"]) == scores(summaries[1]["history"])


@pytest.mark.slow
def test_dev_scores_equal_decoding_the_dev_set_with_the_saved_model(straight_run: Path, corpus: Path) -> None:
    sources = (corpus / "dev.en").read_text(encoding="utf-8").splitlines()
    references = (corpus / "dev.es").read_text(encoding="utf-8").splitlines()
    # greedy, in the precision the run validated in (trainer.precision=auto: bf16 on a CPU with bf16)
    precision = resolve_precision("auto", torch.device("cpu"))
    translator = Translator.from_checkpoint(
        straight_run / "last.pt", options=SearchOptions(), precision=precision
    )
    hypotheses = [translation.text for translation in translator.translate(sources)]
    history = json.loads((straight_run / "summary.json").read_text())["history"]
    assert [record["step"] for record in history] == [2, 4]
    assert history[-1]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(hypotheses, [references]).score, abs=1e-6
    )
    chrf = sacrebleu.corpus_chrf(hypotheses, [references]).score
    assert chrf > 0 and history[-1]["chrf"] == pytest.approx(chrf, abs=1e-6)

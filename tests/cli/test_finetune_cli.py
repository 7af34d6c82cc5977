"""seq2seq-train experiment=finetune init_from=... as a user runs it, from the toy run's last.pt: the run
starts from the checkpoint's very model (its dev loss before update 1 is the loss computed directly from
the saved model), takes its tokenizer byte for byte (none trained), leaves trainer.freeze's parameters
as they were, resumes after a SIGKILL to the uninterrupted run's weights and scores, and refuses, in one
line, settings that contradict the checkpoint and another checkpoint in its run directory."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from commands import ENV, KILL_AFTER_SAVE, error_line, run_module
from toy_corpus import tiny_train_overrides

from seq2seq.data.corpus import read_parallel
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.model import build_from_config
from seq2seq.train.loss import label_smoothed_nll

FROZEN = "encoder.layers.0.*"


def finetune_overrides(corpus: Path, run_dir: Path, start: Path, *changes: str) -> list[str]:
    """The toy run's overrides as a fine-tuning command: no model choice, no tokenizer setting, fp32 (so
    that the direct computation below is the same arithmetic), one layer frozen."""
    return tiny_train_overrides(
        corpus, run_dir, "~model", "~data.tokenizer.vocab_size", "experiment=finetune", f"init_from={start}",
        "trainer.precision=fp32", f"trainer.freeze=[{FROZEN}]", *changes,
    )  # fmt: skip


@pytest.fixture(scope="module")
def finetuned(finished_run: Path, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 fine-tuning updates from the toy run's last.pt, validated at 0 (the start), 2 and 4."""
    run_dir = tmp_path_factory.mktemp("finetuned") / "run"
    result = run_module("seq2seq.cli.train", *finetune_overrides(corpus, run_dir, finished_run / "last.pt"),
                        cwd=run_dir.parent)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir / "output.txt").write_text(result.stdout + result.stderr, encoding="utf-8")
    return run_dir


def direct_dev_loss(checkpoint: Path, corpus: Path) -> float:
    """Label-smoothed loss per dev target token of the saved model, one pair at a time from the logits."""
    payload = torch.load(checkpoint, weights_only=True)
    model = build_from_config(payload["model_config"]).eval()
    model.load_state_dict(payload["model"])
    tokenizer = Tokenizer.from_bytes(payload["tokenizer"]["src"])
    loss = tokens = 0.0
    with torch.no_grad():
        for source, target in zip(*read_parallel(corpus / "dev.en", corpus / "dev.es")):
            src = torch.tensor([tokenizer.encode(source) + [tokenizer.eos_id]])  # (1, S)
            labels = tokenizer.encode(target) + [tokenizer.eos_id]
            tgt_in = torch.tensor([[tokenizer.bos_id, *labels[:-1]]])  # (1, T)
            out = label_smoothed_nll(model(src, tgt_in), torch.tensor([labels]), epsilon=0.1, pad_id=0)
            loss, tokens = loss + float(out.loss_sum), tokens + float(out.n_tokens)
    return loss / tokens


@pytest.mark.slow
def test_the_run_starts_from_the_checkpoints_model(finetuned: Path, finished_run: Path, corpus: Path) -> None:
    history = json.loads((finetuned / "summary.json").read_text())["history"]
    assert [record["step"] for record in history] == [0, 2, 4]
    assert history[0]["loss"] == pytest.approx(direct_dev_loss(finished_run / "last.pt", corpus), rel=1e-5)
    assert 0 <= history[0]["bleu"] <= 100 and "chrf" in history[0]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(finetuned / "tensorboard"))
    events.Reload()
    assert [event.step for event in events.Scalars("valid/loss")] == [0, 2, 4]
    assert "validating the starting model" in (finetuned / "output.txt").read_text()


@pytest.mark.slow
def test_the_tokenizer_is_the_checkpoints_none_is_trained(finetuned: Path, finished_run: Path) -> None:
    start = torch.load(finished_run / "last.pt", weights_only=True)
    assert (finetuned / "spm.model").read_bytes() == start["tokenizer"]["src"]
    ours = torch.load(finetuned / "last.pt", weights_only=True)
    assert ours["tokenizer"] == start["tokenizer"] and ours["model_config"] == start["model_config"]
    assert "tokenizer: training" not in (finetuned / "output.txt").read_text()
    assert ours["config"]["model"]["d_model"] == start["model_config"]["d_model"]


@pytest.mark.slow
def test_frozen_parameters_keep_the_checkpoints_values(finetuned: Path, finished_run: Path) -> None:
    start = torch.load(finished_run / "last.pt", weights_only=True)["model"]
    ours = torch.load(finetuned / "last.pt", weights_only=True)["model"]
    frozen = [key for key in start if key.startswith("encoder.layers.0.")]
    assert frozen and all(torch.equal(ours[key], start[key]) for key in frozen)
    assert not torch.equal(ours["decoder.layers.0.ffn.up.weight"], start["decoder.layers.0.ffn.up.weight"])


@pytest.mark.slow
def test_a_killed_fine_tuning_run_resumes_bitwise(finetuned: Path, finished_run: Path, corpus: Path,
                                                  tmp_path: Path) -> None:  # fmt: skip
    run_dir = tmp_path / "run"
    overrides = finetune_overrides(corpus, run_dir, finished_run / "last.pt")
    command = [sys.executable, "-c", KILL_AFTER_SAVE, "2", "seq2seq.cli.train", *overrides]
    killed = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    resumed = run_module("seq2seq.cli.train", *overrides, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert "resumed from" in log and "at update 2" in log and "validating the starting model" not in log
    ours, theirs = (torch.load(d / "last.pt", weights_only=True) for d in (run_dir, finetuned))
    assert ours["step"] == theirs["step"] == 4
    assert all(torch.equal(ours["model"][key], theirs["model"][key]) for key in theirs["model"])
    histories = [json.loads((d / "summary.json").read_text())["history"] for d in (run_dir, finetuned)]
    strip = [[{k: v for k, v in r.items() if k not in ("minutes", "seconds")} for r in h] for h in histories]
    assert strip[0] == strip[1] and strip[0][0]["step"] == 0  # the start's scores, validated once


@pytest.mark.slow
def test_another_checkpoint_never_takes_over_the_run_directory(
    finetuned: Path, finished_run: Path, corpus: Path, tmp_path: Path
) -> None:
    run_dir = Path(shutil.copytree(finetuned, tmp_path / "run"))
    other = finished_run / "checkpoint_2.pt"
    line = error_line(
        run_module("seq2seq.cli.train", *finetune_overrides(corpus, run_dir, other), cwd=tmp_path)
    )
    assert "init_from.sha256" in line and "last.pt" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("model.d_model=128", "model.d_model=128 (the checkpoint's: 64)"),
        ("model=decoder_only_tiny", "builds another family"),
        ("data.tokenizer.vocab_size=60", "data.tokenizer.vocab_size=60: init_from="),
        ("init_from=missing.pt", "no such checkpoint file"),
        ("~init_from", "init_from is not set: experiment=finetune"),
        ("trainer.freeze=[decoder.layer.*]", "trainer.freeze pattern 'decoder.layer.*' matches no parameter"),
    ],
)
def test_contradictions_are_one_line_errors(finished_run: Path, corpus: Path, tmp_path: Path, change: str,
                                            message: str) -> None:  # fmt: skip
    overrides = finetune_overrides(corpus, tmp_path / "run", finished_run / "last.pt", change)
    assert message in error_line(run_module("seq2seq.cli.train", *overrides, cwd=tmp_path))

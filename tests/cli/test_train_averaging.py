"""trainer.average_last: the run ends by averaging its newest checkpoints into averaged.pt, scores it
on the whole dev set, and that score becomes the run's objective; settings that cannot work are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sacrebleu
import torch
from commands import error_line, run_module
from toy_corpus import tiny_train_overrides

from seq2seq import Translator
from seq2seq.checkpoint import load_checkpoint
from seq2seq.decode.options import SearchOptions
from seq2seq.precision import resolve_precision


def dev_bleu(checkpoint: Path, corpus: Path, *, pairs: int | None = None) -> float:
    """The BLEU of `checkpoint` on the first `pairs` dev pairs of `corpus` (None: all), decoded as the run
    decodes its dev set: the default search, in the run's trainer.precision=auto."""
    sources = (corpus / "dev.en").read_text(encoding="utf-8").splitlines()[:pairs]
    references = (corpus / "dev.es").read_text(encoding="utf-8").splitlines()[:pairs]
    precision = resolve_precision("auto", torch.device("cpu"))  # the run's trainer.precision=auto
    translator = Translator.from_checkpoint(checkpoint, options=SearchOptions(), precision=precision)
    hypotheses = [t.text for t in translator.translate(sources)]
    return sacrebleu.corpus_bleu(hypotheses, [references]).score


@pytest.mark.slow
def test_a_run_ends_with_the_average_of_its_last_checkpoints(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    averaging = ["trainer.max_updates=6", "trainer.average_last=2", "trainer.validate_max_sentences=3"]
    result = run_module("seq2seq.cli.train", *tiny_train_overrides(corpus, run_dir, *averaging), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    averaged = load_checkpoint(run_dir / "averaged.pt")
    newest = [load_checkpoint(run_dir / f"checkpoint_{step}.pt")["model"] for step in (4, 6)]
    for key, value in averaged["model"].items():
        torch.testing.assert_close(value, (newest[0][key] + newest[1][key]) / 2)
    record = json.loads((run_dir / "summary.json").read_text())["averaged"]
    assert record["steps"] == [4, 6] and averaged["averaged_dev"] == record
    # Its dev BLEU is over every dev sentence, as decoding them with averaged.pt gives.
    assert record["bleu"] == pytest.approx(dev_bleu(run_dir / "averaged.pt", corpus), abs=1e-6)
    assert "averaged.pt: the mean of 2 checkpoints (updates 4, 6)" in result.stdout + result.stderr


@pytest.mark.slow
def test_with_too_few_checkpoints_the_objective_is_the_last_checkpoint_on_the_whole_dev_set(
    corpus: Path, tmp_path: Path
) -> None:
    """Fewer than 2 numbered checkpoints: the run's objective is still a whole-dev-set score (of last.pt),
    not the best validation's BLEU on validate_max_sentences sentences; one log line says so. The dev
    pair with an empty side, which the data filter drops, is the one the score leaves out, and says so."""
    data = tmp_path / "corpus"
    shutil.copytree(corpus, data, ignore=shutil.ignore_patterns("cache"))
    for name, line in (("dev.en", "the king sees the dog\n"), ("dev.es", "\n")):
        with open(data / name, "a", encoding="utf-8") as handle:
            handle.write(line)
    run_dir = tmp_path / "run"  # 2 updates: one numbered checkpoint, written at the validation of update 2
    averaging = ["trainer.max_updates=2", "trainer.average_last=5", "trainer.validate_max_sentences=3"]
    result = run_module("seq2seq.cli.train", *tiny_train_overrides(data, run_dir, *averaging), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    (note,) = [line for line in output.splitlines() if "too few to average" in line]
    assert "1 numbered checkpoint" in note and "last.pt (update 2)" in note and "20 of 21 dev pairs" in note
    assert not (run_dir / "averaged.pt").exists()
    record = json.loads((run_dir / "summary.json").read_text())["averaged"]
    assert record["checkpoint"] == str(run_dir / "last.pt") and record["steps"] == [2]
    assert record["averaged"] is False and (record["dev_pairs"], record["dev_pairs_left_out"]) == (20, 1)
    assert record["bleu"] == pytest.approx(dev_bleu(run_dir / "last.pt", data, pairs=20), abs=1e-6)


@pytest.mark.slow
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
    overrides = tiny_train_overrides(corpus, tmp_path / "run", "trainer.save_every=2", *settings)
    assert message in error_line(run_module("seq2seq.cli.train", *overrides, cwd=tmp_path))

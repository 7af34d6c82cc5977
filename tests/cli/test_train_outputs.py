"""What a training run reports, checked against recomputed values: TensorBoard scalars, samples and the
attention image; dev BLEU equal to decoding the dev set afterwards; a bf16 run end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import sacrebleu
import torch
from commands import run_module
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tiny_models import TINY
from toy_corpus import tiny_train_overrides

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.precision import resolve_precision
from seq2seq.train.schedules import noam


def events(run_dir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"images": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


@pytest.mark.slow
def test_tensorboard_holds_the_logged_scalars_samples_and_attention_image(finished_run: Path) -> None:
    board = events(finished_run)
    tags = board.Tags()
    assert {"train/loss", "train/lr", "train/grad_norm", "valid/loss", "valid/ppl", "valid/bleu"} <= set(
        tags["scalars"]
    )
    learning_rates = {event.step: event.value for event in board.Scalars("train/lr")}
    assert sorted(learning_rates) == [1, 2, 3, 4]
    for step, value in learning_rates.items():  # the lr of update s is noam(s) (the tiny d_model, warmup 2)
        assert value == pytest.approx(noam(step, d_model=TINY["d_model"], warmup=2, scale=1.0), rel=1e-6)
    history = json.loads((finished_run / "summary.json").read_text())["history"]
    for name in ("bleu", "loss", "ppl", "chrf"):
        logged = {event.step: event.value for event in board.Scalars(f"valid/{name}")}
        assert logged == {h["step"]: pytest.approx(h[name], rel=1e-6) for h in history}
    assert all(math.isfinite(event.value) and event.value > 0 for event in board.Scalars("train/loss"))
    samples = board.Tensors("valid/samples/text_summary")
    text = samples[-1].tensor_proto.string_val[0].decode()
    assert "**src**" in text and "**ref**" in text and "**hyp**" in text
    images = board.Images("valid/cross_attention")
    assert [image.step for image in images] == [2, 4] and all(image.width > 100 for image in images)


@pytest.mark.slow
def test_dev_bleu_equals_decoding_the_dev_set_with_the_saved_model(finished_run: Path, corpus: Path) -> None:
    sources = (corpus / "dev.en").read_text(encoding="utf-8").splitlines()
    references = (corpus / "dev.es").read_text(encoding="utf-8").splitlines()
    translator = Translator.from_checkpoint(  # decode=greedy, in the precision the run validated in
        finished_run / "last.pt",
        options=SearchOptions(),
        precision=resolve_precision("auto", torch.device("cpu")),
    )
    hypotheses = [t.text for t in translator.translate(sources)]
    expected = sacrebleu.corpus_bleu(hypotheses, [references]).score
    last = json.loads((finished_run / "summary.json").read_text())["history"][-1]
    assert last["step"] == 4 and last["bleu"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
def test_training_and_translation_under_bf16(corpus: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "bf16"
    result = run_module("seq2seq.cli.train", *tiny_train_overrides(corpus, run_dir), "trainer.precision=bf16",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert all(math.isfinite(h["loss"]) and math.isfinite(h["ppl"]) for h in summary["history"])
    assert all(math.isfinite(e.value) for e in events(run_dir).Scalars("train/loss"))
    lines = ["the man sees the dog", "", "a woman finds the house", "the king"]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = run_module("seq2seq.cli.translate", f"checkpoint={run_dir / 'last.pt'}", f"input={source}",
                        f"output={tmp_path / 'out.txt'}", "precision=bf16", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    output = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")
    assert len(output) == len(lines) + 1 and output[1] == "" and output[-1] == ""

"""A teacher to a finished student, as docs/distillation.md gives it: seq2seq-distill over the training
sources, seq2seq-train experiment=student on the distilled pairs beside the original ones (the student
shape, averaging and tuned decoding), then scripts/finish_for_cpu.sh, whose artefacts (our engine with
the shortlist, CTranslate2 with the vocabulary map) translate the dev set exactly as the student
checkpoint does in float32, keep its tuned decoding, and stay within the documented tolerance in int8.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from commands import ENV, train_tiny
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq.checkpoint import load_checkpoint
from seq2seq.inference.exported import read_metadata

REPOSITORY = Path(__file__).resolve().parents[2]
INT8_AGREEMENT = 0.5  # share of dev lines int8 artefacts translate as the fp32 checkpoint does, at least


def finish(checkpoint: Path, corpus: Path, out: Path, weight_format: str) -> dict:
    """scripts/finish_for_cpu.sh on the training pairs, checked on the dev sources -> its finish.json.
    The check searches greedily between fixed length limits: the engines' beams differ in length
    penalty, CTranslate2 limits a batch's outputs by its longest source (which shows when a model this
    young never ends its outputs), and a minimum length keeps the outputs from being empty."""
    environment = {
        **ENV,
        "BIN": os.path.dirname(sys.executable),
        "WEIGHT_FORMAT": weight_format,
        "CHECK_SETTINGS": "decode=greedy decode.min_len=3 decode.max_len_a=0 decode.max_len_b=12",
    }
    result = subprocess.run(
        ["bash", str(REPOSITORY / "scripts" / "finish_for_cpu.sh"), str(checkpoint), str(corpus / "train.en"),
         str(corpus / "train.es"), str(out), str(corpus / "dev.en")],
        cwd=out.parent, env=environment, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "lines identical to the checkpoint's" in result.stdout
    return json.loads((out / "finish.json").read_text())


@pytest.mark.slow
def test_distill_train_a_student_and_finish_it_for_cpu(corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")
    tokenizer = tiny_tokenizer()  # a random teacher that gives every line a translation
    languages = {"data": {"src_lang": "en", "tgt_lang": "es"}}
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0)
    teacher = save_tiny_checkpoint(tmp_path / "teacher.pt", model, tokenizer, step=3, config=languages)
    distilled = subprocess.run(
        [sys.executable, "-m", "seq2seq.cli.distill", f"checkpoint={teacher}",
         f"input={corpus / 'train.en'}", f"output_dir={tmp_path / 'distilled'}", "decode.beam_size=2",
         "decode.max_len_b=12", "filter.drop_fraction=0.05"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert distilled.returncode == 0, distilled.stderr[-3000:]
    report = json.loads((tmp_path / "distilled" / "report.json").read_text())
    assert report["filter"]["dropped"] == 15 and report["filter"]["kept"] == 285  # floor(0.05 * 300)

    pairs = f"[{{src: {tmp_path}/distilled/distill.en, tgt: {tmp_path}/distilled/distill.es}}]"
    student = train_tiny(
        corpus, tmp_path / "student", "~model", "experiment=student", f"data.extra_train={pairs}",
        "trainer.max_updates=6", "trainer.snapshot_every=2", "trainer.tune_decoding_sentences=10",
    )  # fmt: skip
    summary = json.loads((student / "summary.json").read_text())
    checkpoint = student / Path((summary.get("final") or {}).get("checkpoint") or "last.pt").name
    state = load_checkpoint(checkpoint)
    assert (state["model_config"]["encoder_layers"], state["model_config"]["decoder_layers"]) == (6, 2)
    log = (student / "train.log").read_text()
    assert "saved 285 pairs" in log and "saved 300 pairs" in log  # the distilled pairs beside the original

    exact = finish(checkpoint, corpus, tmp_path / "cpu-float32", "float32")
    assert exact["identical"] == {"torch-shortlist": 20, "ctranslate2": 20}
    exported = read_metadata(tmp_path / "cpu-float32" / "ctranslate2-float32")
    assert exported.get("tuned_decoding") == state.get("tuned_decoding")
    assert (tmp_path / "cpu-float32" / "ctranslate2-float32" / "vmap.txt").is_file()

    fast = finish(checkpoint, corpus, tmp_path / "cpu-int8", "int8")
    assert min(fast["identical"].values()) >= INT8_AGREEMENT * fast["lines"], fast

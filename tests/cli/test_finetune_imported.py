"""Fine-tuning an imported Hugging Face model as a user does: seq2seq-import a MarianMT or an M2M100 model
(random weights, tokenizers from sentencepiece models trained on the fly), then seq2seq-train
init_from=it on a corpus. Before update 1 the run's dev loss is transformers' own loss of that model on
the dev pairs (its tokenizer's ids and labels, its decoder start token), and a few updates train it.
(Dev loss only: the loss is what this test compares.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from commands import run_module
from toy_corpus import write_toy_corpus

pytest.importorskip("transformers")
pytest.importorskip("safetensors")
sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))  # the interop tests' Hugging Face models

from huggingface_models import build  # noqa: E402

from seq2seq.data.corpus import read_parallel  # noqa: E402


def transformers_dev_loss(model: torch.nn.Module, tokenizer, corpus: Path) -> float:
    """transformers' cross-entropy per label token over the dev pairs, one pair at a time."""
    total = tokens = 0.0
    with torch.no_grad():
        for source, target in zip(*read_parallel(corpus / "dev.en", corpus / "dev.es")):
            encoded = tokenizer(source, text_target=target, return_tensors="pt")
            labels = encoded["labels"].shape[1]
            total, tokens = total + float(model(**encoded).loss) * labels, tokens + labels
    return total / tokens


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["marian", "m2m100"])
def test_an_imported_model_fine_tunes_from_transformers_own_loss(kind: str, tmp_path: Path) -> None:
    imported = build(kind, tmp_path)
    model, tokenizer, checkpoint = imported.model, imported.tokenizer, imported.checkpoint
    corpus = write_toy_corpus(tmp_path / "corpus", train=60)
    run_dir = tmp_path / "run"
    result = run_module(
        "seq2seq.cli.train", f"init_from={checkpoint}", "experiment=finetune",
        "data=parallel_files", f"data.dir={corpus}", "data.src_lang=en", "data.tgt_lang=es",
        "trainer.precision=fp32", "trainer.max_updates=2", "trainer.validate_every=2", "trainer.save_every=2",
        "trainer.max_tokens=400", "trainer.num_threads=1", "trainer.progress_bar=false", "schedule.warmup=1",
        "schedule.peak_lr=1e-3", "trainer.validate_bleu=false", f"hydra.run.dir={run_dir}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    history = json.loads((run_dir / "summary.json").read_text())["history"]
    assert [record["step"] for record in history] == [0, 2]
    assert history[0]["nll"] == pytest.approx(transformers_dev_loss(model, tokenizer, corpus), rel=1e-5)
    assert history[1]["nll"] < history[0]["nll"]  # two updates on the same kind of text help
    saved = torch.load(run_dir / "last.pt", weights_only=True)
    assert saved["tokenizer"] == torch.load(checkpoint, weights_only=True)["tokenizer"]

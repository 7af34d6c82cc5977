"""The whole trip a user makes: a Hugging Face model imported (seq2seq-import), fine-tuned for 20 updates
(seq2seq-train init_from= experiment=finetune), exported back (target=huggingface): transformers then
generates, greedy and with beam 4, exactly what our Translator generates with the fine-tuned checkpoint,
and the exported weights are the fine-tuned ones, not the imported ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from commands import run_module  # noqa: E402
from huggingface_models import TEXTS, build  # noqa: E402
from test_huggingface_export import assert_generates_alike  # noqa: E402
from toy_corpus import write_toy_corpus  # noqa: E402

from seq2seq.interop.huggingface_export import export_huggingface  # noqa: E402


def fine_tune(
    checkpoint: Path, root: Path, updates: int, *, peak_lr: float = 3e-3, extra: tuple[str, ...] = ()
) -> Path:
    """`updates` updates of experiment=finetune from `checkpoint` on the toy corpus, with the `extra`
    overrides; its last.pt."""
    corpus = write_toy_corpus(root / "corpus", train=60)
    run_dir = root / "run"
    result = run_module(
        "seq2seq.cli.train", f"init_from={checkpoint}", "experiment=finetune", *extra, "data=parallel_files",
        f"data.dir={corpus}", "data.src_lang=en", "data.tgt_lang=es", "trainer.precision=fp32",
        f"trainer.max_updates={updates}", f"trainer.validate_every={updates}",
        f"trainer.save_every={updates}", "trainer.max_tokens=400", "trainer.num_threads=1",
        "trainer.progress_bar=false", "schedule.warmup=1", f"schedule.peak_lr={peak_lr}",
        "trainer.validate_bleu=false", f"hydra.run.dir={run_dir}", cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir / "last.pt"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["marian", "m2m100"])
def test_a_fine_tuned_import_generates_the_same_in_transformers(tmp_path: Path, kind: str) -> None:
    imported = build(kind, tmp_path)
    tuned = fine_tune(imported.checkpoint, tmp_path, updates=20)
    assert torch.load(tuned, weights_only=True)["step"] == 20
    exported = export_huggingface(tuned, tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    changed = [name for name, tensor in imported.model.state_dict().items()
               if not torch.equal(model.state_dict()[name], tensor)]  # fmt: skip
    assert changed, "the exported model is the imported one: fine-tuning did not reach the export"
    assert_generates_alike(tuned, model, tokenizer, TEXTS)

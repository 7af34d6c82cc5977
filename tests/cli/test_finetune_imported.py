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

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))  # the interop tests' Hugging Face fixtures

from huggingface_fixtures import (  # noqa: E402
    m2m100_config_entries,
    m2m100_tokenizer_dir,
    marian_config_entries,
    marian_tokenizer_dir,
)

from seq2seq.data.corpus import read_parallel  # noqa: E402
from seq2seq.interop.huggingface_import import import_huggingface  # noqa: E402

SIZES = dict(
    d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=64, decoder_ffn_dim=64, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    max_position_embeddings=64,
)  # fmt: skip
LANGUAGES = {"marian": {}, "m2m100": {"src_lang": "en", "tgt_lang": "es"}}


def hugging_face_model(kind: str, root: Path) -> tuple[Path, torch.nn.Module, object]:
    """A saved Hugging Face model directory of `kind`, the model and its tokenizer (transformers')."""
    torch.manual_seed(0)
    if kind == "marian":
        directory = marian_tokenizer_dir(root)
        config = transformers.MarianConfig(**marian_config_entries(directory), **SIZES,
                                           activation_function="swish", scale_embedding=True)  # fmt: skip
        model = transformers.MarianMTModel(config)
        with torch.no_grad():
            model.final_logits_bias.normal_(0.0, 1.0)  # an output bias of its own
    else:
        directory = m2m100_tokenizer_dir(root)
        config = transformers.M2M100Config(**m2m100_config_entries(directory), **SIZES, encoder_layerdrop=0.0,
                                           decoder_layerdrop=0.0)  # fmt: skip
        model = transformers.M2M100ForConditionalGeneration(config)
    model.eval().save_pretrained(directory)
    return directory, model, transformers.AutoTokenizer.from_pretrained(directory, **LANGUAGES[kind])


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
    directory, model, tokenizer = hugging_face_model(kind, tmp_path)
    checkpoint = import_huggingface(directory, tmp_path / f"{kind}.pt", **LANGUAGES[kind])
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

"""LoRA on an imported model, the whole trip: a random-weight Hugging Face MarianMT and M2M100 model
imported, fine-tuned a few updates with trainer.lora (seq2seq-train init_from= experiment=finetune),
exported back (target=huggingface). The checkpoint keeps the imported weights as they were, with the
adapters beside them; the export holds the merged weights (changed in the adapted attention projections
only), and transformers generates, greedy and with beam 4, what our Translator generates."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from huggingface_models import TEXTS, build  # noqa: E402
from test_finetune_round_trip import fine_tune  # noqa: E402
from test_huggingface_export import assert_generates_alike  # noqa: E402

from seq2seq.interop.huggingface_export import export_huggingface  # noqa: E402

LORA = "trainer.lora={rank:4,alpha:8,targets:[qkv,q,kv,out]}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["marian", "m2m100"])
def test_a_lora_tuned_import_generates_the_same_in_transformers(tmp_path: Path, kind: str) -> None:
    imported = build(kind, tmp_path)
    tuned = fine_tune(imported.checkpoint, tmp_path, updates=12, peak_lr=1e-2, extra=(LORA,))
    payload, start = (torch.load(path, weights_only=True) for path in (tuned, imported.checkpoint))
    assert payload["step"] == 12 and payload["model"].keys() == start["model"].keys()
    assert all(torch.equal(payload["model"][key], value) for key, value in start["model"].items())
    assert payload["lora"]["rank"] == 4 and payload["lora"]["adapters"]
    exported = export_huggingface(tuned, tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    weights = model.state_dict()
    changed = {
        name for name, tensor in imported.model.state_dict().items() if not torch.equal(weights[name], tensor)
    }
    assert changed, "the exported model is the imported one: the adapters did not reach the export"
    assert all("attn." in name and name.endswith("_proj.weight") for name in changed), sorted(changed)
    assert_generates_alike(tuned, model, tokenizer, TEXTS)

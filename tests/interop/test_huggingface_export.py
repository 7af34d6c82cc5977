"""Round trips: an imported model exported back (format=huggingface) is transformers' model again, tensor
for tensor, and generates what it generated; our own MarianMT-shaped model (post-norm, silu, output bias)
exported that way generates in transformers what our Translator generates; an imported model exported
to CTranslate2 gives our greedy tokens. Refusals: one line each, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from huggingface_models import LIMIT, TEXTS, EosAtLimit, build, outputs  # noqa: E402
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer  # noqa: E402

from seq2seq.decode.options import SearchOptions  # noqa: E402
from seq2seq.errors import UserError  # noqa: E402
from seq2seq.inference.translator import Translator  # noqa: E402
from seq2seq.interop.huggingface_export import export_huggingface  # noqa: E402

GREEDY = SearchOptions(max_len_a=0.0, max_len_b=LIMIT)
BEAM = SearchOptions(beam_size=4, length_penalty=0.0, max_len_a=0.0, max_len_b=LIMIT)


def hf_generate(model, tokenizer, texts: list[str], **settings) -> torch.Tensor:
    """`generate` with the exported generation_config.json, and our length limit (EosAtLimit)."""
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    processors = transformers.LogitsProcessorList([EosAtLimit(model.config.eos_token_id)])
    with torch.no_grad():
        return model.generate(**batch, max_new_tokens=LIMIT + 1, forced_eos_token_id=None,
                              early_stopping=True, logits_processor=processors, **settings)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["marian", "m2m100"])
def test_an_imported_model_exports_back_to_itself(tmp_path, kind):
    imported = build(kind, tmp_path)
    exported = export_huggingface(imported.checkpoint, tmp_path / "exported")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    assert type(model) is type(imported.model) and type(tokenizer) is type(imported.tokenizer)
    original = imported.model.state_dict()
    assert all(torch.equal(model.state_dict()[name], tensor) for name, tensor in original.items())
    assert [tokenizer(text)["input_ids"] for text in TEXTS] == [
        imported.tokenizer(t)["input_ids"] for t in TEXTS
    ]
    generation = json.loads((exported / "generation_config.json").read_text())
    assert generation["bad_words_ids"] == [[model.config.pad_token_id]]
    if kind == "m2m100":  # the target language the checkpoint translates into by default
        assert generation["forced_bos_token_id"] == tokenizer.convert_tokens_to_ids("__es__")
    assert torch.equal(hf_generate(model, tokenizer, TEXTS), imported.generate(TEXTS, num_beams=1))


def own_model_checkpoint(path: Path) -> Path:
    """Our own MarianMT-shaped model (configs/model/marian.yaml's settings at tiny size) and tokenizer,
    with an output bias of its own."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, seed=3, sharpness=3.0, norm="post", activation="silu",
                       output_bias=True, max_positions=64)  # fmt: skip
    with torch.no_grad():
        model.output.bias.normal_(0.0, 1.0)
        model.output.bias[tokenizer.eos_id] += 7.0  # some outputs end before the limit
    return save_tiny_checkpoint(path, model, tokenizer, step=5)


@pytest.mark.slow
def test_our_own_marian_model_generates_the_same_in_transformers(tmp_path):
    checkpoint = own_model_checkpoint(tmp_path / "model.pt")
    exported = export_huggingface(checkpoint, tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    assert isinstance(model, transformers.MarianMTModel)
    texts = sentences(10, seed=4, words=(1, 8))
    ours = assert_generates_alike(checkpoint, model, tokenizer, texts)
    assert {len(tokens) for tokens in ours} != {LIMIT}


def assert_generates_alike(checkpoint: Path, model, tokenizer, texts: list[str]) -> list[list[int]]:
    """Our Translator on `checkpoint` and transformers' `model` (its export) give the same tokens and
    text, greedy and with beam 4; returns our beam-4 tokens."""
    for options, beams in ((GREEDY, 1), (BEAM, 4)):
        translator = Translator.from_checkpoint(checkpoint, options=options)
        ours = [nbest[0].tokens for nbest in translator.search(translator.encode(texts).sources)]
        expected = hf_generate(model, tokenizer, texts, num_beams=beams, length_penalty=0.0)
        assert ours == outputs(expected, model.config)
        decoded = tokenizer.batch_decode(expected, skip_special_tokens=True)
        assert [t.text for t in translator.translate(texts)] == decoded
    return ours


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["marian", "m2m100"])
def test_an_imported_model_exports_to_ctranslate2(tmp_path, kind):
    pytest.importorskip("ctranslate2")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    imported = build(kind, tmp_path)
    exported = export_ctranslate2(imported.checkpoint, tmp_path / "ct2")
    ours = Translator.from_checkpoint(imported.checkpoint, options=GREEDY)
    theirs = Translator.from_checkpoint(exported, options=GREEDY)
    assert theirs.engine.name == "ctranslate2"
    sources = ours.encode(TEXTS).sources
    assert [n[0].tokens for n in ours.search(sources)] == [n[0].tokens for n in theirs.search(sources)]
    assert [t.text for t in ours.translate(TEXTS)] == [t.text for t in theirs.translate(TEXTS)]


def assert_refused(call, message: str, folder: Path) -> None:
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(UserError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {},
            "model.norm=pre with sinusoid_layout=standard",
        ),  # our default model: pre-norm, standard sinusoids
        (dict(norm="post", positional="rope"), "model.positional=rope"),
        (dict(norm="post", activation="swiglu"), "model.activation=swiglu"),
        (dict(norm="post", window=4), "model.window=4"),
    ],
)
def test_settings_without_a_mapping_are_refused_by_name(tmp_path, settings, message):
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, **settings)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=1)
    assert_refused(lambda: export_huggingface(checkpoint, tmp_path / "out"), message, tmp_path)


def test_an_existing_output_is_kept_unless_forced(tmp_path):
    checkpoint = own_model_checkpoint(tmp_path / "model.pt")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("mine")
    with pytest.raises(UserError, match="force=true"):
        export_huggingface(checkpoint, tmp_path / "out")
    assert (tmp_path / "out" / "mine.txt").read_text() == "mine"
    export_huggingface(checkpoint, tmp_path / "out", force=True)
    assert (tmp_path / "out" / "config.json").is_file() and not (tmp_path / "out" / "mine.txt").exists()

"""Round trips: an imported model exported back (target=huggingface) is transformers' model again, tensor
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

from export_refusals import assert_kept_unless_forced, assert_refused  # noqa: E402
from huggingface_models import LIMIT, TEXTS, EosAtLimit, build, outputs  # noqa: E402
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer  # noqa: E402

from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions  # noqa: E402
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
    greedy = hf_generate(model, tokenizer, TEXTS, num_beams=1)  # the export's own default: beam 5
    assert torch.equal(greedy, imported.generate(TEXTS, num_beams=1))


def own_model_checkpoint(path: Path, *, favoured: int | None = None, **extra) -> Path:
    """Our own MarianMT-shaped model (configs/model/marian.yaml's settings at tiny size) and tokenizer,
    with an output bias of its own (raised for token `favoured`, when given); `extra`: more checkpoint
    entries."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, seed=3, sharpness=3.0, norm="post", activation="silu",
                       output_bias=True, max_positions=64)  # fmt: skip
    with torch.no_grad():
        model.output.bias.normal_(0.0, 1.0)
        model.output.bias[tokenizer.eos_id] += 7.0  # some outputs end before the limit
        if favoured is not None:
            model.output.bias[favoured] += 9.0
    return save_tiny_checkpoint(path, model, tokenizer, step=5, **extra)


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


def test_a_text_ending_in_a_lone_word_start_piece_is_the_exported_tokenizers(tmp_path):
    """Outputs that end (or start) with a lone "▁" piece: a forced prefix, then an output bias that
    favours "▁". transformers generates our tokens from the export, and its MarianTokenizer's text
    (which strips the space such a piece leaves) is our Translator's."""
    space = tiny_tokenizer().piece_to_id("▁")
    checkpoint = own_model_checkpoint(tmp_path / "model.pt", favoured=space)
    exported = export_huggingface(checkpoint, tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    translator = Translator.from_checkpoint(checkpoint, options=GREEDY)
    texts = sentences(5, seed=4, words=(1, 8))
    prefixes = ["god", "light was", "water", "", "and"]
    encoded = translator.encode(texts, prefixes=prefixes)
    forced = encoded.prefixes
    ours = [nbest[0].tokens for nbest in translator.search(encoded)]
    assert sum(tokens[-1] == space for tokens in ours) >= 2 and ours[-1][0] == space
    start = model.config.decoder_start_token_id
    for text, prefix, tokens in zip(texts, forced, ours):
        generated = hf_generate(model, tokenizer, [text], decoder_input_ids=torch.tensor([[start, *prefix]]),
                                num_beams=1)  # fmt: skip
        assert outputs(generated, model.config) == [tokens]
    expected = tokenizer.batch_decode(ours, skip_special_tokens=True)
    assert [t.text for t in translator.translate(texts, prefixes=prefixes)] == expected
    assert not any(text != text.strip() for text in expected)


def test_generation_config_carries_what_transformers_can_express(tmp_path):
    """A plain generate() on the export searches with our default beam size and early stopping, under the
    decoder's positions; the model's tuned length penalty (GNMT's, not transformers') and our length
    limit that grows with the source are not written (docs/pretrained-models.md says so)."""
    tuned = {"values": {"length_penalty": 1.4, "max_len_a": 1.5}, "chosen": True, "beam_size": 5}
    checkpoint = own_model_checkpoint(tmp_path / "model.pt", tuned_decoding=tuned)
    exported = export_huggingface(checkpoint, tmp_path / "hf")
    written = json.loads((exported / "generation_config.json").read_text())
    expected = {"num_beams": DEFAULT_OPTIONS.beam_size, "early_stopping": True, "max_length": 64}
    assert {key: written[key] for key in expected} == expected
    assert not {"length_penalty", "max_new_tokens", "max_len_a", "max_len_b"} & set(written)
    assert "_from_model_config" not in written  # transformers 4.x would replace the file by config.json's
    loaded = transformers.GenerationConfig.from_pretrained(exported)
    assert (loaded.num_beams, loaded.early_stopping, loaded.max_length) == (5, True, 64)
    assert loaded.bad_words_ids == written["bad_words_ids"]
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported)
    assert model.generation_config.num_beams == DEFAULT_OPTIONS.beam_size


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
    assert_kept_unless_forced(export_huggingface, checkpoint, tmp_path / "out", "config.json")

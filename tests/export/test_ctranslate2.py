"""CTranslate2 export: random models of every supported kind give our greedy output token for token and
our logits to 1e-4; every unsupported setting is a one-line error that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from export_refusals import assert_export_refused, assert_kept_unless_forced
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.export.ctranslate2 import METADATA_FILE, export_ctranslate2
from seq2seq.inference.translator import Translator

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'"
)

GREEDY = SearchOptions(max_len_a=0.0, max_len_b=12)  # a constant limit: random models rarely stop


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


def write_checkpoint(path: Path, tokenizer: Tokenizer, *, seed: int = 0, **settings) -> Path:
    # sharpness: clear-cut choices, no near-ties for two engines to break differently
    model = tiny_model(tokenizer.vocab_size, seed=seed, max_positions=64, sharpness=4.0, **settings)
    return save_tiny_checkpoint(path, model, tokenizer, step=7)


KINDS = {
    "sinusoidal-pre-tied-relu": {},
    "learned-post-untied-gelu": dict(
        positional="learned",
        norm="post",
        share_embeddings=False,
        share_decoder_output=False,
        activation="gelu",
    ),
    "sinusoidal-post-tied": dict(norm="post"),
    "learned-pre-untied": dict(positional="learned", share_embeddings=False, share_decoder_output=False),
    "rope-pre": dict(positional="rope"),
    "swiglu-pre": dict(activation="swiglu"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_float32_export_gives_our_greedy_output_and_logits(tmp_path, tokenizer, kind):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer, **KINDS[kind])
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    ours = Translator.from_checkpoint(checkpoint, options=GREEDY)
    theirs = Translator.from_checkpoint(exported, options=GREEDY)
    assert theirs.engine.name == "ctranslate2" and theirs.step == 7
    texts = sentences(36, seed=1, words=(1, 10))
    assert [t.text for t in ours.translate(texts)] == [t.text for t in theirs.translate(texts)]
    source = ours.encode(texts[:4]).sources
    our_tokens = [nbest[0].tokens for nbest in ours.search(source)]
    assert our_tokens == [nbest[0].tokens for nbest in theirs.search(source)]
    assert any(len(tokens) == GREEDY.max_len_b for tokens in our_tokens)  # the length limit is exercised
    assert_first_step_logits_match(ours, exported, source)


def assert_first_step_logits_match(ours: Translator, exported: Path, sources: list[list[int]]) -> None:
    """Encoder and first decoder step: CTranslate2's logits equal ours (pad, bos, eos suppressed there)."""
    model, tokenizer = ours.model, ours.tgt_tokenizer
    translator = ctranslate2.Translator(str(exported))
    for source in sources:
        src = torch.tensor([source])  # (1, S)
        with torch.inference_mode():
            state = model.init_state(model.encode(src))
            logits, _ = model.decode_step(torch.tensor([[tokenizer.bos_id]]), state)  # (1, V)
        pieces = [tokenizer.id_to_piece(i) for i in source[:-1]]
        result = translator.translate_batch(
            [pieces], beam_size=1, max_decoding_length=1, return_logits_vocab=True,
            suppress_sequences=[["<pad>"], ["<s>"]],
        )[0]  # fmt: skip
        theirs = np.asarray(result.logits[0][0])
        keep = np.ones_like(theirs, dtype=bool)
        keep[[tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id]] = False
        np.testing.assert_allclose(theirs[keep], logits[0].numpy()[keep], atol=1e-4, rtol=1e-4)


def test_int8_export_translates_and_is_smaller(tmp_path, tokenizer):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer)
    full = export_ctranslate2(checkpoint, tmp_path / "fp32")
    small = export_ctranslate2(checkpoint, tmp_path / "int8", weight_format="int8")
    assert (small / "model.bin").stat().st_size < 0.6 * (full / "model.bin").stat().st_size
    texts = sentences(12, seed=2, words=(1, 10))
    outputs = Translator.from_checkpoint(small, options=GREEDY).translate(texts)
    assert len(outputs) == 12 and all(isinstance(t.text, str) for t in outputs)


def test_the_deprecated_quantization_keyword_still_works_with_one_warning(tmp_path, tokenizer):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer)
    with pytest.warns(DeprecationWarning) as caught:
        written = export_ctranslate2(checkpoint, tmp_path / "int8", quantization="int8")
    assert [str(w.message) for w in caught] == [
        "quantization is deprecated and will stop working in the next release; use weight_format"
    ]
    assert json.loads((written / METADATA_FILE).read_text())["weight_format"] == "int8"
    with pytest.raises(UserError, match="pass weight_format= only"):
        export_ctranslate2(checkpoint, tmp_path / "both", weight_format="int8", quantization="int8")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(positional="alibi"), "model.positional=alibi"),
        (dict(window=4), "model.window=4"),
        (dict(cross_downsample=2), "model.cross_downsample=2"),
    ],
)
def test_unsupported_settings_are_one_line_errors_and_write_nothing(tmp_path, tokenizer, settings, message):
    assert_export_refused(write_checkpoint(tmp_path / "model.pt", tokenizer, **settings), message)


def test_existing_output_is_kept_unless_forced(tmp_path, tokenizer):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer)
    assert_kept_unless_forced(export_ctranslate2, checkpoint, tmp_path / "out", "model.bin")
    with pytest.raises(UserError, match="weight_format='int4' is not supported"):
        export_ctranslate2(checkpoint, tmp_path / "other", weight_format="int4")

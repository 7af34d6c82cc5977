"""CTranslate2 export of the settings imported Hugging Face models need: SiLU ("swish"), unscaled
embeddings, an output bias, fairseq's sinusoids counted from an offset, learned positions with an offset,
and the tokenizer's special tokens. Each gives our greedy output token for token and our first-step logits
to 1e-4, encoder-decoder and decoder-only. (Imported models, whose special ids are not ours: a decoder that
starts from pad or eos, language codes; are exported in tests/interop/test_huggingface_export.py.)"""

from __future__ import annotations

import json

import pytest
import torch
from test_ctranslate2 import GREEDY, assert_first_step_logits_match
from test_export_decoder_only import decoder_only_model
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.inference.translator import Translator

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'"
)


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


def with_random_bias(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """A logit bias of its own (zeros, as at init, would not show a dropped bias)."""
    if model.output.bias is not None:
        with torch.no_grad():
            model.output.bias.copy_(
                torch.randn(model.output.bias.shape, generator=torch.Generator().manual_seed(seed))
            )
    return model


KINDS = {
    "marian": dict(norm="post", activation="silu", output_bias=True),
    "unscaled-silu-pre": dict(activation="silu", scale_embeddings=False),
    "fairseq-offset": dict(sinusoid_layout="fairseq", position_offset=2, output_bias=True),
    "learned-offset": dict(positional="learned", position_offset=3, norm="post"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_encoder_decoder_settings_give_our_output_and_logits(tmp_path, tokenizer, kind):
    model = with_random_bias(
        tiny_model(tokenizer.vocab_size, seed=1, max_positions=64, sharpness=4.0, **KINDS[kind]), seed=2
    )
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=3)
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    ours = Translator.from_checkpoint(checkpoint, options=GREEDY)
    theirs = Translator.from_checkpoint(exported, options=GREEDY)
    texts = sentences(24, seed=3, words=(1, 10))
    source = ours.encode(texts).sources
    assert [n[0].tokens for n in ours.search(source)] == [n[0].tokens for n in theirs.search(source)]
    assert_first_step_logits_match(ours, exported, source[:4])


@pytest.mark.parametrize("kind", ["marian", "unscaled-silu-pre", "fairseq-offset"])
def test_decoder_only_settings_give_our_output(tmp_path, tokenizer, kind):
    model = with_random_bias(decoder_only_model(tokenizer, **KINDS[kind]), seed=4)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=3)
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    ours = Translator.from_checkpoint(checkpoint, options=GREEDY)
    theirs = Translator.from_checkpoint(exported, options=GREEDY)
    source = ours.encode(sentences(16, seed=5, words=(1, 8))).sources
    assert [n[0].tokens for n in ours.search(source)] == [n[0].tokens for n in theirs.search(source)]


def test_the_special_tokens_are_the_tokenizer_s(tmp_path, tokenizer):
    """The spec's decoder start, bos, eos and unk tokens are the target tokenizer's pieces."""
    model = tiny_model(tokenizer.vocab_size, max_positions=64)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=3)
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    config = json.loads((exported / "config.json").read_text())
    pieces = [tokenizer.id_to_piece(i) for i in (tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id)]
    assert [config["bos_token"], config["eos_token"], config["unk_token"]] == pieces
    assert config["decoder_start_token"] == pieces[0] and config["add_source_eos"]


def test_a_guided_models_alignment_head_is_what_ctranslate2_returns_as_attention(tmp_path) -> None:
    """return_attention gives, for each output token, the attention of the alignment head (layer 0,
    head 0 here; CTranslate2's default would be the last layer's)."""
    import ctranslate2

    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, seed=4, max_positions=64, sharpness=4.0, alignment_layer=0,
                       alignment_head=0)  # fmt: skip
    exported = export_ctranslate2(save_tiny_checkpoint(tmp_path / "m.pt", model, tokenizer, step=1),
                                  tmp_path / "ct2")  # fmt: skip
    source = tokenizer.encode(sentences(1, seed=5)[0])
    result = ctranslate2.Translator(str(exported)).translate_batch(
        [[tokenizer.id_to_piece(i) for i in source]], beam_size=1, max_decoding_length=6, return_attention=True
    )[0]  # fmt: skip
    output = [tokenizer.piece_to_id(piece) for piece in result.hypotheses[0]]
    src = torch.tensor([[*source, tokenizer.eos_id]])  # (1, S)
    tgt_in = torch.tensor([[tokenizer.bos_id, *output]])  # (1, T)
    ours = model.cross_attention(src, tgt_in, layer=0)[0, 0, : len(output), :-1]  # (T, S - 1)
    theirs = torch.tensor(result.attention[0])  # (T, S - 1): CTranslate2 leaves the source's eos out
    torch.testing.assert_close(theirs, ours, atol=1e-4, rtol=1e-4)

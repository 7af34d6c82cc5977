"""The model side of the Hugging Face interop, without tokenizers: config.json -> our settings, the weight
name map both ways, and the refusals. A MarianMTModel and an M2M100ForConditionalGeneration built with
random weights give our model's logits (teacher forcing, a padded batch) to 1e-4 once mapped, and map
back to their own tensors exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from huggingface_models import SIZES as MODEL_SIZES  # noqa: E402

from seq2seq.errors import UserError  # noqa: E402
from seq2seq.interop.huggingface_config import (  # noqa: E402
    export_problems,
    huggingface_config,
    model_settings,
    read_config,
)
from seq2seq.interop.huggingface_weights import (  # noqa: E402
    check_shapes,
    huggingface_from_ours,
    ours_from_huggingface,
    read_weights,
    weight_files,
    write_safetensors,
)
from seq2seq.model import build_model  # noqa: E402
from seq2seq.nn.positional import sinusoid_table  # noqa: E402

SIZES = {**MODEL_SIZES, "decoder_layers": 3}  # unequal depths: the name maps may not assume them equal
VOCAB = 100


def marian(directory: Path, **overrides) -> transformers.MarianMTModel:
    torch.manual_seed(0)
    settings = dict(vocab_size=VOCAB, pad_token_id=VOCAB - 1, eos_token_id=0,
                    decoder_start_token_id=VOCAB - 1, activation_function="swish", scale_embedding=True,
                    **SIZES)  # fmt: skip
    model = transformers.MarianMTModel(transformers.MarianConfig(**{**settings, **overrides})).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_()
    model.save_pretrained(directory)
    return model


def m2m100(directory: Path, **overrides) -> transformers.M2M100ForConditionalGeneration:
    torch.manual_seed(1)
    config = transformers.M2M100Config(vocab_size=VOCAB, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                                       **{**SIZES, **overrides})  # fmt: skip
    model = transformers.M2M100ForConditionalGeneration(config).eval()
    with torch.no_grad():  # layer norms other than the identity, so that a misplaced one shows
        for name, parameter in model.named_parameters():
            if "layer_norm" in name:
                parameter.normal_(1.0 if name.endswith("weight") else 0.0, 0.2)
    model.save_pretrained(directory)
    return model


def imported(directory: Path) -> torch.nn.Module:
    settings = model_settings(read_config(directory))
    model = build_model(**settings).eval()
    state = ours_from_huggingface(read_weights(weight_files(directory)), settings, str(directory))
    check_shapes(state, model.state_dict(), str(directory))
    model.load_state_dict(state)
    return model


def assert_same_logits(theirs: torch.nn.Module, ours: torch.nn.Module, pad: int, start: int) -> None:
    """Teacher-forced logits on a right-padded batch, at every real target position."""
    torch.manual_seed(2)
    src = torch.randint(3, VOCAB - 10, (3, 11))  # (B, S)
    src[1, 7:], src[2, 3:] = pad, pad
    tgt = torch.randint(3, VOCAB - 10, (3, 9))  # (B, T)
    tgt[:, 0] = start
    tgt[1, 6:] = pad
    with torch.no_grad():
        expected = theirs(input_ids=src, attention_mask=(src != pad).long(), decoder_input_ids=tgt).logits
        got = ours(src, tgt)  # (B, T, V)
    real = torch.ones_like(tgt, dtype=torch.bool)
    real[1, 6:] = False
    assert (expected - got)[real].abs().max() <= 1e-4
    assert expected.abs().max() > 1.0  # not a model whose logits are all near zero


@pytest.mark.parametrize("activation", ["swish", "gelu", "relu"])
def test_marian_logits_equal_ours(tmp_path, activation):
    theirs = marian(tmp_path, activation_function=activation)
    ours = imported(tmp_path)
    assert ours.config["norm"] == "post" and ours.config["output_bias"]
    assert ours.config["activation"] == {"swish": "silu"}.get(activation, activation)
    assert_same_logits(theirs, ours, pad=VOCAB - 1, start=VOCAB - 1)


def test_marian_without_embedding_scale_and_with_separate_vocabularies(tmp_path):
    theirs = marian(tmp_path, scale_embedding=False, share_encoder_decoder_embeddings=False,
                    decoder_vocab_size=VOCAB)  # fmt: skip
    ours = imported(tmp_path)
    assert not ours.config["scale_embeddings"] and not ours.config["share_embeddings"]
    assert ours.config["share_decoder_output"]
    assert_same_logits(theirs, ours, pad=VOCAB - 1, start=VOCAB - 1)


def test_m2m100_logits_equal_ours(tmp_path):
    theirs = m2m100(tmp_path)
    ours = imported(tmp_path)
    config = ours.config
    assert (config["norm"], config["sinusoid_layout"], config["position_offset"]) == ("pre", "fairseq", 2)
    assert_same_logits(theirs, ours, pad=1, start=2)


@pytest.mark.parametrize("build", [marian, m2m100])
def test_weights_map_back_to_the_same_tensors(tmp_path, build):
    build(tmp_path)
    ours = imported(tmp_path)
    stored = safetensors_torch.load_file(tmp_path / "model.safetensors")
    back = huggingface_from_ours(ours.state_dict(), ours.config)
    assert sorted(back) == sorted(stored)
    assert all(torch.equal(back[name], stored[name]) for name in stored)


def test_an_older_file_s_stored_sinusoids_are_checked(tmp_path):
    marian(tmp_path)
    weights = safetensors_torch.load_file(tmp_path / "model.safetensors")
    table = transformers.MarianMTModel.from_pretrained(tmp_path).model.encoder.embed_positions.weight
    weights["model.encoder.embed_positions.weight"] = table.detach().clone()
    safetensors_torch.save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    imported(tmp_path)  # the table transformers computes is ours
    weights["model.encoder.embed_positions.weight"] = torch.randn_like(table)
    safetensors_torch.save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(UserError, match="not the standard sinusoid table"):
        imported(tmp_path)


def test_sharded_and_pytorch_bin_weights_are_read(tmp_path):
    theirs = marian(tmp_path / "one")
    theirs.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    state = theirs.state_dict()
    (tmp_path / "bin").mkdir()
    torch.save(
        {k: v for k, v in state.items() if "embed_positions" not in k}, tmp_path / "bin" / "pytorch_model.bin"
    )
    (tmp_path / "bin" / "config.json").write_text((tmp_path / "one" / "config.json").read_text())
    reference = imported(tmp_path / "one").state_dict()
    for name in ("sharded", "bin"):
        got = imported(tmp_path / name).state_dict()
        assert all(torch.equal(got[key], reference[key]) for key in reference)


def write_config(directory: Path, **changes) -> None:
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(model_type="bart"), "model_type='bart'"),
        (dict(architectures=["MarianForCausalLM"]), "architectures=['MarianForCausalLM']"),
        (dict(decoder_attention_heads=2), "decoder_attention_heads=2"),
        (dict(decoder_ffn_dim=32), "decoder_ffn_dim=32"),
        (dict(activation_function="gelu_new"), "activation_function='gelu_new'"),
        (dict(tie_word_embeddings=False), "tie_word_embeddings=false"),
        (dict(encoder_layers=3), "lacks the weight model.encoder.layers.2"),
        (dict(decoder_layers=2), "holds the weight model.decoder.layers.2"),
        (dict(d_model=16, encoder_attention_heads=2, decoder_attention_heads=2), "has shape"),
    ],
)
def test_configs_we_cannot_compute_are_refused_by_name(tmp_path, changes, message):
    marian(tmp_path)
    write_config(tmp_path, **changes)
    with pytest.raises(UserError) as error:
        imported(tmp_path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_options_transformers_never_reads_are_imported_as_it_computes(tmp_path):
    """BART's normalize_embedding & co. in a MarianMT config: transformers runs the model without them,
    and so does the import (a log line says so: test_huggingface_import)."""
    marian(tmp_path)
    write_config(tmp_path, normalize_embedding=True, add_final_layer_norm=True, normalize_before=True)
    theirs = transformers.MarianMTModel.from_pretrained(tmp_path).eval()
    ours = imported(tmp_path)
    assert ours.config["norm"] == "post"
    assert_same_logits(theirs, ours, pad=VOCAB - 1, start=VOCAB - 1)


def test_layerdrop_is_accepted(tmp_path):
    m2m100(tmp_path)
    write_config(tmp_path, encoder_layerdrop=0.05, decoder_layerdrop=0.05)
    assert imported(tmp_path).config["norm"] == "pre"


def test_export_refusals_name_the_setting():
    base = build_model(src_vocab_size=20, tgt_vocab_size=20, norm="post", d_model=16, n_heads=2).config
    assert export_problems(base) == []
    cases = {
        "model.positional=rope": dict(positional="rope"),
        "model.window=4": dict(window=4),
        "model.cross_downsample=2": dict(cross_downsample=2),
        "model.activation=swiglu": dict(activation="swiglu"),
        "position_offset=2 in a post-norm model": dict(position_offset=2),
        "model.norm=pre with sinusoid_layout=standard": dict(norm="pre"),
        "model.output_bias=true in a pre-norm": dict(norm="pre", sinusoid_layout="fairseq", position_offset=1,
                                                     output_bias=True),
    }  # fmt: skip
    for message, changes in cases.items():
        problems = export_problems({**base, **changes})
        assert problems and message in problems[0], (message, problems)


def test_exported_config_loads_in_transformers():
    config = build_model(src_vocab_size=20, tgt_vocab_size=20, norm="post", d_model=16, n_heads=2,
                         activation="silu", output_bias=True).config  # fmt: skip
    ids = {"pad_token_id": 0, "eos_token_id": 3, "decoder_start_token_id": 2}
    loaded = transformers.MarianConfig(**huggingface_config(config, ids))
    assert (loaded.activation_function, loaded.forced_eos_token_id, loaded.d_model) == ("swish", 3, 16)


def test_the_sinusoid_tables_are_transformers():
    """MarianMT's table (numpy, float64) is our standard layout from position 0; M2M100's is our fairseq
    layout, its row p being position p (rows from pad_id + 1 = 2 are read; row pad_id is zeroed)."""
    marian_table = transformers.models.marian.modeling_marian.MarianSinusoidalPositionalEmbedding(64, 32)
    expected = marian_table.create_weight()  # (64, 32)
    assert (sinusoid_table(torch.arange(64), 32) - expected).abs().max() < 1e-5
    m2m = transformers.models.m2m_100.modeling_m2m_100.M2M100SinusoidalPositionalEmbedding
    table = m2m.get_embedding(66, 32, padding_idx=1)  # (66, 32)
    assert (sinusoid_table(torch.arange(2, 66), 32, "fairseq") - table[2:]).abs().max() < 1e-5


def export_directory(model: torch.nn.Module, directory: Path, ids: dict) -> Path:
    """Our model's config.json and model.safetensors (the tokenizer files aside)."""
    directory.mkdir()
    write_safetensors(
        huggingface_from_ours(model.state_dict(), model.config), directory / "model.safetensors"
    )
    (directory / "config.json").write_text(json.dumps(huggingface_config(model.config, ids)))
    return directory


@pytest.mark.parametrize(
    "settings",
    [
        dict(norm="post", activation="silu", output_bias=True),
        dict(norm="post", activation="gelu", scale_embeddings=False, share_embeddings=False),
        dict(norm="post", share_embeddings=False, share_decoder_output=False, output_bias=True),
        dict(norm="pre", sinusoid_layout="fairseq", position_offset=1),  # M2M100: pad 0 -> offset 1
    ],
)
def test_our_models_load_in_transformers_with_our_logits(tmp_path, settings):
    torch.manual_seed(3)
    sizes = dict(d_model=32, n_heads=4, ffn_dim=64, encoder_layers=2, decoder_layers=2, max_positions=64)
    model = build_model(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, dropout=0.0, **sizes, **settings).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))  # biases and norms other than at init
    ids = {"pad_token_id": 0, "eos_token_id": 3, "decoder_start_token_id": 2, "bos_token_id": 2}
    directory = export_directory(model, tmp_path / "hf", ids)
    theirs = transformers.AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
    assert type(theirs).__name__ == (
        "MarianMTModel" if settings["norm"] == "post" else "M2M100ForConditionalGeneration"
    )
    assert_same_logits(theirs, model, pad=0, start=2)

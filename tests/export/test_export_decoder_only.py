"""CTranslate2 export of the decoder-only family: a random causal model of every positional scheme the
decoder spec expresses gives our greedy output token for token (through CTranslate2's own Generator and
through our Translator) and our log-probabilities to 1e-4; length limits, forced prefixes and n-best
lists mean what ours mean; what the spec cannot express is a one-line error that writes nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from commands import run_module
from export_refusals import assert_export_refused
from omegaconf import OmegaConf
from tiny_models import save_tiny_checkpoint, sentences, tiny_decoder_only, tiny_tokenizer

from seq2seq.cli.export import export
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.export.ctranslate2 import export_ctranslate2, unsupported_settings
from seq2seq.inference.exported import METADATA_FILE, read_metadata
from seq2seq.inference.translator import Translator

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'"
)

GREEDY = SearchOptions(max_len_a=0.0, max_len_b=12)  # a constant limit: one per batch in CTranslate2 too
SIGN_SCALE = 4.0  # see decoder_only_model
EOS_SCALE = 1.5


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


def decoder_only_model(tokenizer: Tokenizer, *, seed: int = 0, **settings) -> torch.nn.Module:
    """A random tiny causal model whose greedy outputs vary from sentence to sentence.

    A random stack changes its input little, so the last state stays close to the last token's
    embedding, and a tied output projection then repeats that token for ever. Random signs on the norm
    the projection reads (times SIGN_SCALE, for clear-cut choices) break that mirror; a larger eos row
    makes some outputs stop before the length limit.
    """
    model = tiny_decoder_only(tokenizer.vocab_size, seed=seed, **{"max_positions": 64, **settings})
    stack = model.stack
    last_norm = stack.final_norm if model.config["norm"] == "pre" else stack.layers[-1].ffn_block.norm
    draw = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, last_norm.weight.shape, generator=draw) * 2.0 - 1.0  # (D,)
    with torch.no_grad():
        last_norm.weight.mul_(SIGN_SCALE * signs)
        model.output.weight[tokenizer.eos_id].mul_(EOS_SCALE)
    return model


def write_checkpoint(path: Path, tokenizer: Tokenizer, **settings) -> Path:
    return save_tiny_checkpoint(path, decoder_only_model(tokenizer, **settings), tokenizer, step=7)


KINDS = {
    "sinusoidal-pre-tied-relu": {},
    "learned-post-untied-gelu": dict(
        positional="learned", norm="post", share_decoder_output=False, activation="gelu"
    ),
    "rope-pre-tied-swiglu": dict(positional="rope", activation="swiglu"),
    "alibi-pre-tied": dict(positional="alibi"),
    "alibi-post-untied": dict(positional="alibi", norm="post", share_decoder_output=False),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_float32_export_gives_our_greedy_output_and_log_probs(tmp_path, tokenizer, kind):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer, **KINDS[kind])
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    assert read_metadata(exported)["family"] == "decoder_only"
    ours = Translator.from_checkpoint(checkpoint, options=GREEDY)
    texts = sentences(16, seed=1, words=(1, 10))
    sources = ours.encode(texts).sources
    our_tokens = [nbest[0].tokens for nbest in ours.search(sources)]
    assert len({tuple(tokens) for tokens in our_tokens}) > len(texts) // 2  # not one token repeated
    assert any(len(tokens) == GREEDY.max_len_b for tokens in our_tokens)  # the length limit is exercised
    generator = ctranslate2.Generator(str(exported))
    assert generator_greedy(generator, tokenizer, sources) == our_tokens
    theirs = Translator.from_checkpoint(exported, engine="ctranslate2", options=GREEDY)
    assert theirs.engine.name == "ctranslate2" and theirs.step == 7
    assert [nbest[0].tokens for nbest in theirs.search(sources)] == our_tokens
    assert [t.text for t in theirs.translate(texts)] == [ours.detokenize(tokens) for tokens in our_tokens]
    assert_log_probs_match(ours.model, generator, tokenizer, sources[:3], our_tokens[:3])


def prompt(tokenizer: Tokenizer, source: Sequence[int], output: Sequence[int] = ()) -> list[str]:
    """What our DecoderOnly reads: the source (eos included), the tag <s>, then the output so far."""
    return [tokenizer.id_to_piece(i) for i in [*source, tokenizer.bos_id, *output]]


def generator_greedy(generator, tokenizer: Tokenizer, sources: list[list[int]]) -> list[list[int]]:
    """CTranslate2's own greedy search over the prompts, one batch of different lengths."""
    results = generator.generate_batch(
        [prompt(tokenizer, source) for source in sources], max_length=GREEDY.max_len_b,
        include_prompt_in_result=False, suppress_sequences=[["<pad>"], ["<s>"]],
    )  # fmt: skip
    return [list(result.sequences_ids[0]) for result in results]


def assert_log_probs_match(model, generator, tokenizer: Tokenizer, sources, outputs) -> None:
    """Every target position: CTranslate2's log-probabilities (the whole sequence forwarded at once)
    equal ours, the first from the cached prefill and one decode_step, all of them teacher-forced."""
    for source, output in zip(sources, outputs):
        src = torch.tensor([source])  # (1, S)
        with torch.inference_mode():
            state = model.init_state(model.encode(src))
            first, _ = model.decode_step(torch.tensor([[tokenizer.bos_id]]), state)  # (1, V)
            forced = model(src, torch.tensor([[tokenizer.bos_id, *output]]))  # (1, T + 1, V)
        logits = generator.forward_batch([prompt(tokenizer, source, output)], return_log_probs=True)
        theirs = np.asarray(logits)[0, len(source) :]  # (T + 1, V): from the tag on
        np.testing.assert_allclose(theirs[0], first.log_softmax(-1)[0].numpy(), atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(theirs, forced.log_softmax(-1)[0].numpy(), atol=1e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def short_model(tokenizer, tmp_path_factory) -> tuple[Translator, Translator]:
    """(ours, exported) of a model with 24 positions: long sources leave less room than max_len allows."""
    directory = tmp_path_factory.mktemp("short")
    checkpoint = write_checkpoint(directory / "model.pt", tokenizer, max_positions=24)
    exported = export_ctranslate2(checkpoint, directory / "ct2")
    return Translator.from_checkpoint(checkpoint), Translator.from_checkpoint(exported)


def test_length_limits_apply_to_the_target_part_like_ours(short_model, tokenizer):
    ours, theirs = short_model
    options = SearchOptions(max_len_a=1.0, max_len_b=2)  # one source at a time: its own limit
    sources = ours.encode(sentences(12, seed=3, words=(1, 7))).sources
    capped = 0
    for source in sources:
        our_tokens = ours.search([source], options)[0][0].tokens
        assert theirs.search([source], options)[0][0].tokens == our_tokens
        room = 24 - len(source) - 1  # positions left after the source and the tag
        capped += len(our_tokens) == room < len(source) + 2
    assert capped  # the room, not max_len, ended some outputs
    lengths = [len(nbest[0].tokens) for nbest in theirs.search(sources, options)]
    assert max(lengths) <= 24 - max(len(source) for source in sources) - 1  # a batch fits every row
    too_long = [[5] * 23 + [tokenizer.eos_id]]  # 24 positions: none left for the tag and the output
    for translator in (ours, theirs):
        with pytest.raises(UserError) as error:
            translator.search(too_long, options)
        assert "no room" in str(error.value) and "\n" not in str(error.value)


def test_the_exported_model_has_our_input_limit_and_answers_its_longest_lines(short_model):
    ours, theirs = short_model
    assert theirs.max_input_tokens == ours.max_input_tokens == 11  # 11 + eos + tag + 11 outputs = 24
    line = " ".join(["god"] * 40)  # longer than the limit: truncated to it, with room left to answer
    assert theirs.translate([line], beam_size=1)[0].text == ours.translate([line], beam_size=1)[0].text


def test_forced_prefixes_beam_and_nbest(short_model, tokenizer):
    ours, theirs = short_model
    sources = ours.encode(sentences(6, seed=4, words=(1, 4))).sources
    prefixes = [tokenizer.encode(text) for text in ("god", "in the", "", "light was", "day", "")]
    for source, prefix in zip(sources, prefixes):  # one at a time: the limit counts the prefix in
        our_tokens = ours.search([source], GREEDY, prefixes=[prefix])[0][0].tokens
        assert theirs.search([source], GREEDY, prefixes=[prefix])[0][0].tokens == our_tokens
        assert our_tokens[: len(prefix)] == prefix
    together = theirs.search(sources, GREEDY, prefixes=prefixes)
    assert all(nbest[0].tokens[: len(prefix)] == prefix for nbest, prefix in zip(together, prefixes))
    beam = theirs.search(sources, GREEDY.replace(beam_size=4, nbest=3))
    assert all(len(nbest) == 3 and len({tuple(h.tokens) for h in nbest}) == 3 for nbest in beam)
    assert all([h.score for h in nbest] == sorted((h.score for h in nbest), reverse=True) for nbest in beam)


# The other settings the spec could not express cannot be built for this family (cross_downsample, other
# positional schemes); the refusal of a scheme without a mapping is checked on a config below.
@pytest.mark.parametrize(
    ("settings", "message"),
    [(dict(prefix_lm=True), "model.prefix_lm=true"), (dict(window=4), "model.window=4")],
)
def test_unsupported_settings_are_one_line_errors_and_write_nothing(tmp_path, tokenizer, settings, message):
    assert_export_refused(write_checkpoint(tmp_path / "model.pt", tokenizer, **settings), message)


def test_a_positional_scheme_without_a_mapping_is_refused_by_name(tokenizer):
    config = {**decoder_only_model(tokenizer).config, "positional": "xpos"}
    assert unsupported_settings(config) == ["model.positional=xpos (its decoder-only spec takes "
                                            "sinusoidal / learned / rope / alibi positions)"]  # fmt: skip
    assert unsupported_settings({**config, "positional": "alibi"}) == []


def test_export_command_writes_a_decoder_only_int8_model_and_refuses_before_writing(
    tmp_path, tokenizer, capsys
):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer)
    settings = dict(checkpoint=str(checkpoint), target="ctranslate2", weight_format="int8", force=False)
    settings["shortlist"] = None  # configs/export.yaml's keys
    written = export(OmegaConf.create({**settings, "output_dir": str(tmp_path / "int8")}))
    metadata = json.loads((written / METADATA_FILE).read_text())
    assert metadata["family"] == metadata["model_config"]["family"] == "decoder_only"
    outputs = Translator.from_checkpoint(written, options=GREEDY).translate(sentences(4, seed=2))
    assert len(outputs) == 4 and all(isinstance(t.text, str) for t in outputs)
    refused = write_checkpoint(tmp_path / "prefix.pt", tokenizer, prefix_lm=True)
    with pytest.raises(SystemExit) as exit_code:
        export(OmegaConf.create({**settings, "checkpoint": str(refused), "output_dir": str(tmp_path / "no")}))
    assert exit_code.value.code == 2 and "model.prefix_lm=true" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["int8", "model.pt", "prefix.pt"]


@pytest.mark.slow
def test_the_export_command_takes_weight_format_and_its_old_name_with_one_warning(tmp_path, tokenizer):
    checkpoint = write_checkpoint(tmp_path / "model.pt", tokenizer)
    for key, name in (("weight_format", "new"), ("quantization", "old")):
        result = run_module("seq2seq.cli.export", f"checkpoint={checkpoint}", f"output_dir={tmp_path / name}",
                            f"{key}=int8", cwd=tmp_path)  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        assert json.loads((tmp_path / name / METADATA_FILE).read_text())["weight_format"] == "int8"
        warnings = [line for line in result.stderr.splitlines() if "deprecated" in line]
        assert warnings == (
            [] if key == "weight_format"
            else ["quantization is deprecated and will stop working in the next release; use weight_format"]
        )  # fmt: skip


def test_an_export_of_an_unknown_family_is_a_one_line_error(tmp_path):
    directory = tmp_path / "copy"
    directory.mkdir()
    metadata = {"format": "seq2seq-ctranslate2", "version": 1, "family": "encoder_only"}
    (directory / METADATA_FILE).write_text(json.dumps(metadata))
    with pytest.raises(UserError, match="'encoder_only' model") as error:
        read_metadata(directory)
    assert "\n" not in str(error.value)
    del metadata["family"]
    (directory / METADATA_FILE).write_text(json.dumps(metadata))
    assert read_metadata(directory)["family"] == "encoder_decoder"  # exports from before the family

"""seq2seq-import: what the checkpoint holds, that every command takes it (translate with int8, a
shortlist, constraints and confidence; export to CTranslate2 in int8; average; the CLIs), and the
refusals: one line each, before any output exists."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from commands import run_module  # noqa: E402
from huggingface_models import TEXTS, Imported, build, logit_difference  # noqa: E402

from seq2seq.checkpoint import load_checkpoint  # noqa: E402
from seq2seq.decode.options import SearchOptions  # noqa: E402
from seq2seq.decode.shortlist import build_shortlist, tokenizer_digest  # noqa: E402
from seq2seq.errors import UserError  # noqa: E402
from seq2seq.inference.translator import Translator  # noqa: E402
from seq2seq.interop.huggingface_import import import_huggingface  # noqa: E402
from seq2seq.model import build_from_config  # noqa: E402

GREEDY = SearchOptions(max_len_a=0.0, max_len_b=8)


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Imported:
    return build("marian", tmp_path_factory.mktemp("marian"))


@pytest.fixture(scope="module")
def m2m100(tmp_path_factory) -> Imported:
    return build("m2m100", tmp_path_factory.mktemp("m2m100"))


def test_the_checkpoint_is_an_ordinary_one(marian, m2m100):
    payload = load_checkpoint(marian.checkpoint)
    assert payload["step"] == 0 and payload["model_config"]["family"] == "encoder_decoder"
    model = build_from_config(payload["model_config"])
    model.load_state_dict(payload["model"])
    assert payload["config"]["model"]["_target_"] == "seq2seq.model.build_model"
    assert payload["config"]["data"] == {"src_lang": "en", "tgt_lang": "es"}  # tokenizer_config.json's
    assert payload["config"]["imported_from"]["architecture"] == "MarianMTModel"
    multilingual = load_checkpoint(m2m100.checkpoint)
    assert multilingual["config"]["data"] == {"src_lang": "en", "tgt_lang": "es"}
    assert multilingual["tokenizer"]["tgt"] is not None  # the target side has its own language code


def test_languages_asked_for_are_recorded(marian, m2m100, tmp_path):
    import_huggingface(marian.directory, tmp_path / "marian.pt", src_lang="eng", tgt_lang="spa")
    assert load_checkpoint(tmp_path / "marian.pt")["config"]["data"] == {"src_lang": "eng", "tgt_lang": "spa"}
    import_huggingface(m2m100.directory, tmp_path / "m2m100.pt", src_lang="fr", tgt_lang="de")
    translator = Translator.from_checkpoint(tmp_path / "m2m100.pt")
    assert (translator.src_tokenizer.language, translator.tgt_tokenizer.language) == ("fr", "de")
    assert translator.encode(["the dog"]).sources[0][0] == m2m100.tokenizer.convert_tokens_to_ids("__fr__")


def test_every_translation_feature_takes_it(marian, tmp_path):
    plain = Translator.from_checkpoint(marian.checkpoint, options=GREEDY)
    int8 = Translator.from_checkpoint(marian.checkpoint, options=GREEDY, quantization="int8")
    assert len(int8.translate(TEXTS)) == len(TEXTS)
    [scored] = plain.translate(TEXTS[:1], confidence=True)
    assert 0.0 < scored.confidence <= 1.0 and len(scored.token_probs) == len(scored.tokens)  # eos included
    [constrained] = plain.translate(["Tom sees the dog."], constraints=[["perro"]], beam_size=4)
    assert "perro" in constrained.text and constrained.constraints_met == 1
    sources = plain.encode(TEXTS).sources
    outputs = [nbest[0].tokens for nbest in plain.search(sources)]
    src, tgt = plain.src_tokenizer, plain.tgt_tokenizer  # a shortlist that holds the outputs' tokens
    digests = (tokenizer_digest(src.to_bytes()), tokenizer_digest(tgt.to_bytes()))
    table = build_shortlist(zip(sources, outputs), src_vocab_size=src.vocab_size,
                            tgt_vocab_size=tgt.vocab_size, per_source=8, frequent=4,
                            always=[tgt.eos_id, tgt.unk_id], digests=digests)  # fmt: skip
    table.save(tmp_path / "shortlist.pt")
    listed = Translator.from_checkpoint(
        marian.checkpoint, options=GREEDY, shortlist=tmp_path / "shortlist.pt"
    )
    assert [nbest[0].tokens for nbest in listed.search(sources)] == outputs


def test_ctranslate2_int8_export_and_average_take_it(marian, tmp_path):
    pytest.importorskip("ctranslate2")
    from seq2seq.export.ctranslate2 import export_ctranslate2
    from seq2seq.train.averaging import average_checkpoints

    exported = export_ctranslate2(marian.checkpoint, tmp_path / "ct2", weight_format="int8")
    translated = Translator.from_checkpoint(exported, options=GREEDY).translate(TEXTS)
    assert len(translated) == len(TEXTS)
    copy = tmp_path / "copy.pt"
    shutil.copy(marian.checkpoint, copy)
    averaged = average_checkpoints([marian.checkpoint, copy])
    original = load_checkpoint(marian.checkpoint)["model"]
    assert all(torch.equal(averaged["model"][name], tensor) for name, tensor in original.items())


@pytest.mark.slow
def test_the_commands_take_it(marian, tmp_path):
    output = tmp_path / "imported.pt"
    result = run_module("seq2seq.cli.import_model", f"input_dir={marian.directory}", f"output={output}",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "importing MarianMTModel (marian)" in result.stderr and "languages en -> es" in result.stderr
    (tmp_path / "in.en").write_text("\n".join(TEXTS) + "\n")
    result = run_module("seq2seq.cli.translate", f"checkpoint={output}", "input=in.en", "output=out.es",
                        "decode=greedy", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert len((tmp_path / "out.es").read_text().splitlines()) == len(TEXTS)
    result = run_module("seq2seq.cli.export", f"checkpoint={output}", "output_dir=hf", "target=huggingface",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert isinstance(
        transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "hf"), transformers.MarianMTModel
    )
    result = run_module("seq2seq.cli.average", "--inputs", str(output), str(marian.checkpoint), "--output",
                        str(tmp_path / "avg.pt"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]


# ---------------------------------------------------------------------------------------- refusals
def assert_refused(directory: Path, output: Path, message: str, **settings) -> None:
    with pytest.raises(UserError) as error:
        import_huggingface(directory, output, **settings)
    assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
    assert not output.exists() and not list(output.parent.glob(f".{output.name}*"))


@pytest.fixture
def copy_of(marian, tmp_path) -> Path:
    directory = tmp_path / "model"
    shutil.copytree(marian.directory, directory)
    return directory


def test_an_unknown_model_type_is_refused(copy_of, tmp_path):
    config = json.loads((copy_of / "config.json").read_text())
    (copy_of / "config.json").write_text(json.dumps({**config, "model_type": "t5"}))
    assert_refused(copy_of, tmp_path / "out.pt", "model_type='t5', which cannot be imported")


def test_a_missing_weight_file_is_refused(copy_of, tmp_path):
    (copy_of / "model.safetensors").unlink()
    assert_refused(
        copy_of, tmp_path / "out.pt", "has no weights: neither model.safetensors nor pytorch_model.bin"
    )


def test_a_corrupt_config_is_refused(copy_of, tmp_path):
    (copy_of / "config.json").write_text('{"model_type": "marian", ')
    assert_refused(copy_of, tmp_path / "out.pt", "config.json is not valid JSON")


def test_a_corrupt_weight_file_is_refused(copy_of, tmp_path):
    (copy_of / "model.safetensors").write_bytes(b"\x00" * 64)
    assert_refused(copy_of, tmp_path / "out.pt", "is not a readable safetensors file")


def test_a_bpe_only_marian_directory_is_refused(copy_of, tmp_path):
    (copy_of / "source.spm").unlink()
    (copy_of / "target.spm").unlink()
    (copy_of / "merges.txt").write_text("#version: 0.2\n")
    assert_refused(copy_of, tmp_path / "out.pt", "(BPE) cannot be imported")


def test_tokenizer_files_of_another_model_are_refused(copy_of, tmp_path):
    config = json.loads((copy_of / "config.json").read_text())
    (copy_of / "config.json").write_text(
        json.dumps({**config, "pad_token_id": 5, "decoder_start_token_id": 5})
    )
    assert_refused(copy_of, tmp_path / "out.pt", "the tokenizer files belong to another model")


def edited_copy(imported: Imported, tmp_path: Path, **entries) -> Path:
    """A copy of `imported`'s directory whose config.json has `entries` set."""
    directory = tmp_path / f"{imported.kind}-edited"
    shutil.copytree(imported.directory, directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, **entries}))
    return directory


def test_an_m2m100_decoder_starting_from_pad_is_refused(m2m100, tmp_path):
    """M2M100's positions give a pad token padding's position and number the others from pad + 1: a
    decoder started from pad has no single computation in transformers (its forward and its cached
    generation number the target differently), so no import can equal it."""
    pad = m2m100.model.config.pad_token_id
    directory = edited_copy(m2m100, tmp_path, decoder_start_token_id=pad)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
    batch = m2m100.encode(TEXTS[:1])
    with torch.no_grad():  # generate's logits (cached decoding) and a forward pass over what it generated
        cached = model.generate(**batch, decoder_start_token_id=pad, min_new_tokens=4, max_new_tokens=4,
                                num_beams=1, do_sample=False, output_logits=True,
                                return_dict_in_generate=True)  # fmt: skip
        whole = model(**batch, decoder_input_ids=cached.sequences[:, :-1]).logits  # (1, 4, V)
    steps = torch.stack(cached.logits, dim=1)  # (1, 4, V)
    assert torch.allclose(whole[:, 0], steps[:, 0], atol=1e-4)  # the start token alone: the same
    assert (whole - steps)[:, 1:].abs().amax() > 0.1  # after it, transformers disagrees with itself
    assert_refused(directory, tmp_path / "out.pt", "decoder_start_token_id=1, the pad_token_id, which "
                   "M2M100/NLLB position embeddings treat as padding", **m2m100.languages)  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "ignored"), [("marian", {"normalize_before": True}), ("m2m100", {"add_final_layer_norm": False})]
)
def test_options_transformers_ignores_import_as_it_computes(kind, ignored, request, tmp_path, caplog):
    """BART's normalize_before & co. are read by neither MarianMT's nor M2M100's code: the import logs
    one line and computes what transformers computes (post-norm for MarianMT, whatever the key says)."""
    imported = request.getfixturevalue(kind)
    directory = edited_copy(imported, tmp_path, **ignored)
    with caplog.at_level(logging.INFO, logger="seq2seq.interop"):
        checkpoint = import_huggingface(directory, tmp_path / "out.pt", **imported.languages)
    [key] = ignored
    lines = [record.getMessage() for record in caplog.records if key in record.getMessage()]
    assert len(lines) == 1 and "ignores: imported as transformers computes it" in lines[0], lines
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
    assert getattr(model.config, key) == ignored[key]  # transformers keeps the key and does not apply it
    assert load_checkpoint(checkpoint)["model_config"]["norm"] == {"marian": "post", "m2m100": "pre"}[kind]
    assert logit_difference(model, imported.tokenizer, checkpoint) <= 1e-4


def test_an_existing_output_is_kept_unless_forced(marian, tmp_path):
    output = tmp_path / "out.pt"
    output.write_text("mine")
    assert_refused_keeps = pytest.raises(UserError, match="force=true")
    with assert_refused_keeps:
        import_huggingface(marian.directory, output)
    assert output.read_text() == "mine"
    import_huggingface(marian.directory, output, force=True)
    assert load_checkpoint(output)["step"] == 0


def test_an_unknown_language_is_refused(m2m100, tmp_path):
    assert_refused(m2m100.directory, tmp_path / "out.pt", "'xx'", tgt_lang="xx")
    assert_refused(m2m100.directory.parent / "marian-missing", tmp_path / "out.pt", "does not exist")


def test_the_server_takes_it(m2m100):
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
    pytest.importorskip("httpx", reason="needs the serve extra: pip install '.[serve]'")
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.metrics import Metrics
    from seq2seq.serve.requests import Limits

    translator = Translator.from_checkpoint(m2m100.checkpoint, options=GREEDY)
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(m2m100.checkpoint, options=GREEDY))
    app = create_app(batcher, name="m2m100", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as client:
        default = client.post("/translate", json={"texts": TEXTS})
        french = client.post("/translate", json={"texts": TEXTS, "tgt_lang": "fr"})
    assert default.status_code == french.status_code == 200, french.text
    assert default.json()["translations"] == [t.text for t in translator.translate(TEXTS)]
    assert french.json()["translations"] == [t.text for t in translator.translate(TEXTS, tgt_lang="fr")]


@pytest.mark.slow
def test_the_command_refuses_in_one_line_and_explains_itself(copy_of, tmp_path):
    (copy_of / "model.safetensors").unlink()
    result = run_module("seq2seq.cli.import_model", f"input_dir={copy_of}", "output=out.pt", cwd=tmp_path)
    assert result.returncode == 2 and not (tmp_path / "out.pt").exists()
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "has no weights" in errors[0], result.stderr[-2000:]
    result = run_module("seq2seq.cli.import_model", "--help", cwd=tmp_path)
    assert result.returncode == 0 and "MarianMTModel" in result.stdout and "src_lang" in result.stdout

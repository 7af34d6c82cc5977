"""Argos Translate packages (seq2seq-export target=argos): the .argosmodel file is one directory holding what
argostranslate 1.11 reads; argostranslate installs it with no network and translates, sentence by sentence,
exactly as our CTranslate2 engine does with argostranslate's search settings; what a package cannot hold
is a one-line error naming it, with nothing written."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from export_refusals import assert_kept_unless_forced, assert_refused
from in_process import run_command
from multilingual_model import multilingual_checkpoint, own_multilingual_checkpoint
from tiny_models import save_tiny_checkpoint, sentences, tiny_decoder_only, tiny_model, tiny_tokenizer

from seq2seq.checkpoint import save_checkpoint
from seq2seq.cli.export import export
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.options import SearchOptions
from seq2seq.export.argos import ARGOS_MAX_OUTPUT, export_argos
from seq2seq.inference.translator import Translator

pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")

RECORDED = {"config": {"data": {"src_lang": "en", "tgt_lang": "es"}}}  # the languages training records
NAME = "translate-en_es-1_0"
# Paragraphs, and the sentences argostranslate's splitter (the package's) cuts each into.
PARAGRAPHS = {
    "in the beginning god created heaven and earth": ["in the beginning god created heaven and earth"],
    "the night was good": ["the night was good"],
    "water and land. Light was good": ["water and land.", "Light was good"],
}
# argostranslate.translate.apply_packaged_translation's search: beam 4 (ARGOS_BEAM_SIZE), CTranslate2's
# length penalty 0.2, CTranslate2's default limit of 256 tokens; its Translator's compute_type "auto" is
# int8 on a CPU: our engine with quantization="int8".
ARGOS_SEARCH = SearchOptions(beam_size=4, length_penalty=0.2, max_len_a=0.0, max_len_b=ARGOS_MAX_OUTPUT)

# Installs the package (argv[1]) and translates the texts (argv[2], JSON) en -> es, with every connection
# refused: what it prints (JSON) was made offline.
ARGOS = """
import json, socket, sys

def offline(*args, **kwargs):
    raise OSError("this test has no network")

socket.socket.connect = offline
socket.create_connection = offline
from argostranslate import package, translate

package.install_from_path(sys.argv[1])
print(json.dumps({
    "packages": [package.argospm_package_name(p) for p in package.get_installed_packages()],
    "languages": [[language.code, language.name] for language in translate.get_installed_languages()],
    "translations": [translate.translate(text, "en", "es") for text in json.loads(sys.argv[2])],
}))
"""


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


def argos_checkpoint(path: Path, tokenizer: Tokenizer, **extra: object) -> Path:
    """A random tiny model whose translations end (eos a little favoured), at different lengths, and hold no
    pad, bos or unk (argostranslate would write them, or put a source word for unk, where our engine
    leaves them out); 300 positions, room for argostranslate's 256 output tokens."""
    model = tiny_model(tokenizer.vocab_size, seed=3, max_positions=300, output_bias=True)
    with torch.no_grad():
        model.output.bias[[tokenizer.pad_id, tokenizer.bos_id, tokenizer.unk_id]] = -1e4
        model.output.bias[tokenizer.eos_id] = 1.0
    return save_tiny_checkpoint(path, model, tokenizer, step=3, **extra)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer) -> Path:
    folder = tmp_path_factory.mktemp("argos")
    return export_argos(argos_checkpoint(folder / "model.pt", tokenizer, **RECORDED), folder / "out")


def language_names() -> list[list[str]]:
    """[code, name] of the package's languages: Lingua's English names (the clean extra), else the codes."""
    named = importlib.util.find_spec("lingua") is not None
    return [["en", "English" if named else "en"], ["es", "Spanish" if named else "es"]]


def test_the_package_is_one_directory_of_what_argostranslate_reads(package: Path, tokenizer: Tokenizer):
    assert [p.name for p in package.parent.iterdir()] == [package.name] == [f"{NAME}.argosmodel"]
    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        metadata = json.loads(archive.read(f"{NAME}/metadata.json"))
        assert archive.read(f"{NAME}/sentencepiece.model") == tokenizer.to_bytes()
    assert {name.split("/")[0] for name in names} == {NAME}
    files = {name.removeprefix(f"{NAME}/") for name in names if not name.endswith("/")}
    assert {"model/model.bin", "model/config.json", "minisbd/sentences.onnx", "README.md"} <= files
    assert "model/pytorch.pt" not in files  # argostranslate never reads it
    (source, source_name), (target, target_name) = language_names()
    assert metadata == {
        "package_version": "1.0", "argos_version": "1.11", "type": "translate", "from_code": source,
        "from_name": source_name, "to_code": target, "to_name": target_name, "links": [],
    }  # fmt: skip


@pytest.mark.slow
def test_argostranslate_installs_it_offline_and_translates_as_our_engine(package: Path, tmp_path: Path):
    pytest.importorskip("argostranslate", reason="the test extra's argostranslate")
    home = tmp_path / "home"  # argostranslate's settings, packages and caches: XDG folders read at import
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ARGOS_", "XDG_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"), OMP_NUM_THREADS="1")  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", ARGOS, str(package), json.dumps(list(PARAGRAPHS))],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    argos = json.loads(result.stdout)
    assert argos["packages"] == ["translate-en_es"] and argos["languages"] == language_names()
    installed = home / "data" / "argos-translate" / "packages" / NAME / "model"
    ours = Translator.from_checkpoint(installed, quantization="int8", options=ARGOS_SEARCH)
    expected = [" ".join(t.text for t in ours.translate(cut)) for cut in PARAGRAPHS.values()]
    assert argos["translations"] == expected
    assert len(set(expected)) == len(expected) and all(expected)  # each paragraph its own translation


def test_an_existing_output_is_kept_unless_forced(tmp_path: Path, tokenizer: Tokenizer):
    checkpoint = argos_checkpoint(tmp_path / "model.pt", tokenizer, **RECORDED)
    assert_kept_unless_forced(export_argos, checkpoint, tmp_path / "out", f"{NAME}.argosmodel")


def separate_tokenizers(path: Path, tokenizer: Tokenizer) -> Path:
    """A checkpoint whose target tokenizer is another sentencepiece model of the same size."""
    other = Tokenizer.train(sentences(400, 1), vocab_size=tokenizer.vocab_size, model_type="bpe")
    assert other.to_bytes() != tokenizer.to_bytes() and other.vocab_size == tokenizer.vocab_size
    model = tiny_model(tokenizer.vocab_size)
    tokenizers = {"src": tokenizer.to_bytes(), "tgt": other.to_bytes()}
    payload = {"model": model.state_dict(), "model_config": model.config, "tokenizer": tokenizers}
    save_checkpoint(path, payload)
    return path


def decoder_only(path: Path, tokenizer: Tokenizer) -> Path:
    return save_tiny_checkpoint(path, tiny_decoder_only(tokenizer.vocab_size), tokenizer, step=1)


def alibi(path: Path, tokenizer: Tokenizer) -> Path:
    return save_tiny_checkpoint(path, tiny_model(tokenizer.vocab_size, positional="alibi"), tokenizer, step=1)


REFUSALS = {  # what the checkpoint is -> (how it is written, the words of its one-line refusal)
    "decoder-only": (decoder_only, "cannot hold a decoder-only model"),
    "alibi": (alibi, "model.positional=alibi (its encoder-decoder spec"),
    "separate tokenizers": (separate_tokenizers, "separate source and target tokenizers"),
    "an imported model's tokenizer": (
        lambda path, _: multilingual_checkpoint(path),
        "a tokenizer that is not a sentencepiece model",
    ),
    "multilingual": (
        lambda path, _: own_multilingual_checkpoint(path),
        "a multilingual model (language tokens for en, es, fr)",
    ),
    "no languages": (argos_checkpoint, "records no src_lang or tgt_lang"),
}


@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_what_a_package_cannot_hold_is_refused_by_name(tmp_path: Path, tokenizer: Tokenizer, kind: str):
    write, message = REFUSALS[kind]
    checkpoint = write(tmp_path / "model.pt", tokenizer)
    assert_refused(lambda: export_argos(checkpoint, tmp_path / "out"), message, tmp_path)


@pytest.mark.parametrize(
    ("languages", "message"),
    [
        ({"src_lang": "e n"}, "src_lang='e n' is not a language code"),
        ({"tgt_lang": "en"}, "src_lang and tgt_lang are both 'en'"),
    ],
)
def test_language_codes_are_checked(tmp_path: Path, tokenizer: Tokenizer, languages: dict, message: str):
    checkpoint = argos_checkpoint(tmp_path / "model.pt", tokenizer, **RECORDED)
    assert_refused(lambda: export_argos(checkpoint, tmp_path / "out", **languages), message, tmp_path)


def test_the_export_command_names_the_languages_and_stores_int8(tmp_path: Path, tokenizer: Tokenizer):
    checkpoint = argos_checkpoint(tmp_path / "model.pt", tokenizer, **RECORDED)
    result = run_command(export, "export", f"checkpoint={checkpoint}", f"output_dir={tmp_path / 'out'}",
                         "target=argos", "src_lang=de", "tgt_lang=fr", "weight_format=int8")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    with zipfile.ZipFile(tmp_path / "out" / "translate-de_fr-1_0.argosmodel") as archive:
        metadata = json.loads(archive.read("translate-de_fr-1_0/metadata.json"))
        exported = json.loads(archive.read("translate-de_fr-1_0/model/seq2seq.json"))
    assert (metadata["from_code"], metadata["to_code"], exported["weight_format"]) == ("de", "fr", "int8")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["target=argos", "shortlist=sl.pt"], "shortlist= is exported as CTranslate2's vocabulary map"),
        (["target=ctranslate2", "src_lang=en"], "src_lang= alone: name the pair the export records"),
        (["target=huggingface", "src_lang=en", "tgt_lang=es"], "takes no src_lang= or tgt_lang="),
    ],
)
def test_the_export_command_refuses_settings_of_another_target(tmp_path: Path, overrides: list, message: str):
    result = run_command(export, "export", f"checkpoint={tmp_path / 'model.pt'}",
                         f"output_dir={tmp_path / 'out'}", *overrides)  # fmt: skip
    assert result.returncode == 2 and message in result.stderr
    assert list(tmp_path.iterdir()) == []

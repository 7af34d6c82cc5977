"""seq2seq-translate quantization=int8: our engine's output equals the int8 Translator's own, one line per
input line, and the report says int8; an exported model loads with CTranslate2's int8 compute type
whatever its export quantization; a value nothing runs is a one-line error.

The command's function runs in this process on the config Hydra composes (as
tests/cli/test_translate_confidence.py does), except the refusal, which runs as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commands import error_line, run_module
from test_translate_confidence import run_translate  # the command's function, in this process
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.nn.quantized import int8_available

LINES = [*sentences(5, seed=4), "", "the dog 🐕 sees the cat"]
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=128)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "model.pt", model, tokenizer, step=3)


@pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no dynamic int8 kernels")
@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_int8_output_is_the_int8_translators(checkpoint, tmp_path, decode) -> None:
    report = tmp_path / "report.json"
    settings = [f"decode={decode}", "quantization=int8", f"report={report}"]
    code, stderr, output = run_translate(checkpoint, tmp_path, *settings, lines=LINES)
    assert code == 0, stderr[-2000:]
    beam = 1 if decode == "greedy" else 5
    expected = Translator.from_checkpoint(checkpoint, quantization="int8", options=OPTIONS)
    assert output == [t.text for t in expected.translate(LINES, beam_size=beam)]
    assert output[5] == ""  # the empty line stays empty
    assert json.loads(report.read_text())["quantization"] == "int8"


def test_ctranslate2_loads_an_export_with_its_int8_compute_type(checkpoint, tmp_path) -> None:
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")  # float32 weights
    as_exported = Translator.from_checkpoint(exported)
    int8 = Translator.from_checkpoint(exported, quantization="int8")
    assert as_exported.engine.runner.compute_type == "float32"
    assert int8.engine.runner.compute_type == "int8_float32"  # CTranslate2 names int8 products on float32 so
    assert len(int8.translate(LINES, beam_size=1)) == len(LINES)


@pytest.mark.slow
def test_an_unknown_quantization_is_one_line(checkpoint, tmp_path) -> None:
    source = tmp_path / "input.txt"
    source.write_text("in the beginning\n", encoding="utf-8")
    settings = [f"checkpoint={checkpoint}", f"input={source}", "quantization=int4"]
    result = run_module("seq2seq.cli.translate", *settings, cwd=tmp_path)
    assert error_line(result) == "error: quantization='int4' is not supported; choose none or int8"

"""Decoding settings stored in a checkpoint (trainer.tune_decoding) are the model's own defaults: the
Translator, seq2seq-translate and an exported model use them, and a setting given explicitly wins."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from commands import run_module
from tiny_models import sentences
from tuned_model import TUNED, write_checkpoint

from seq2seq import Translator
from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.errors import UserError

TEXTS = sentences(20, 5)
OWN = DEFAULT_OPTIONS.replace(length_penalty=3.0, max_len_a=0.5)  # TUNED's values on beam 5


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("tuned")
    return {
        "tuned": write_checkpoint(directory / "tuned.pt"),
        "plain": write_checkpoint(directory / "plain.pt", decoding=None),
    }


def texts(translator: Translator, **settings: float) -> list[str]:
    """The translations of TEXTS, as text."""
    return [t.text for t in translator.translate(TEXTS, **settings)]


@pytest.fixture(scope="module")
def expected(models: dict[str, Path]) -> dict[float, list[str]]:
    """Translations with length_penalty 3.0 (the model's own) and 1.0 (the built-in default)."""
    plain = Translator.from_checkpoint(models["plain"], options=OWN)
    outputs = {penalty: texts(plain, length_penalty=penalty) for penalty in (3.0, 1.0)}
    assert sum(a != b for a, b in zip(outputs[3.0], outputs[1.0])) >= 10  # the penalty shows in outputs
    return outputs


def test_the_translator_uses_the_models_own_settings(models: dict[str, Path], expected, caplog) -> None:
    with caplog.at_level("INFO", logger="seq2seq.inference.translator"):
        translator = Translator.from_checkpoint(models["tuned"])
    assert translator.options == OWN and texts(translator) == expected[3.0]
    (note,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("decoding:")]
    assert note == (
        "decoding: length_penalty=3.0, max_len_a=0.5, the model's own (tuned on 500 dev sentences with "
        f"beam 5: 22.4 vs 20.5 BLEU with length_penalty=1.0, max_len_a=1.2; stored in {models['tuned']})"
    )
    plain = Translator.from_checkpoint(models["plain"])
    assert plain.options == DEFAULT_OPTIONS and texts(plain) == expected[1.0]


# heavy: the slowest of the quick loop (two more beam-5 translations of all of TEXTS)
@pytest.mark.slow
def test_settings_given_in_python_win(models: dict[str, Path], expected) -> None:
    tuned = Translator.from_checkpoint(models["tuned"])
    assert texts(tuned, length_penalty=1.0) == expected[1.0]  # an argument of translate()
    explicit = Translator.from_checkpoint(models["tuned"], options=SearchOptions(beam_size=5))
    assert explicit.options == DEFAULT_OPTIONS and texts(explicit) == expected[1.0]
    # A mapping like the decode config: what it sets wins, what it leaves null or out is the model's own.
    mapping = Translator.from_checkpoint(models["tuned"], options={"length_penalty": None, "max_len_a": 2.0})
    assert mapping.options == OWN.replace(max_len_a=2.0)


def test_an_ensemble_uses_its_first_models_settings(models: dict[str, Path], caplog) -> None:
    with caplog.at_level("INFO", logger="seq2seq.inference.translator"):
        first = Translator.from_checkpoint([models["tuned"], models["plain"]])
        second = Translator.from_checkpoint([models["plain"], models["tuned"]])
    assert first.options == OWN and second.options == DEFAULT_OPTIONS
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("decoding:")]
    assert f"stored in {models['tuned']} (the first model of the ensemble)" in notes[0]
    assert f"({models['plain']} (the first model of the ensemble) holds no tuned values)" in notes[1]


def test_damaged_settings_are_a_one_line_error(models: dict[str, Path], tmp_path: Path) -> None:
    payload = load_checkpoint(models["tuned"])
    payload["tuned_decoding"] = {**TUNED, "values": {"length_penalty": "long"}}
    save_checkpoint(tmp_path / "damaged.pt", payload)
    with pytest.raises(UserError, match="stored decoding setting length_penalty='long' must be float"):
        Translator.from_checkpoint(tmp_path / "damaged.pt")


def translate_cli(checkpoint: Path, tmp_path: Path, *args: str) -> tuple[list[str], str, dict]:
    source, output, report = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "report.json"
    source.write_text("".join(text + "\n" for text in TEXTS), encoding="utf-8")
    result = run_module("seq2seq.cli.translate", f"checkpoint={checkpoint}", f"input={source}",
                        f"output={output}", f"report={report}", *args, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    (note,) = [line for line in result.stderr.splitlines() if " decoding: " in line]
    return output.read_text(encoding="utf-8").splitlines(), note, json.loads(report.read_text())["decode"]


@pytest.mark.slow
def test_seq2seq_translate_uses_them_unless_a_key_is_given(models: dict[str, Path], expected, tmp_path):
    lines, note, decode = translate_cli(models["tuned"], tmp_path)
    assert lines == expected[3.0] and decode == dataclasses.asdict(OWN)
    assert "length_penalty=3.0, max_len_a=0.5, the model's own (tuned on 500 dev sentences" in note
    lines, note, decode = translate_cli(models["tuned"], tmp_path, "decode.length_penalty=1.0")
    assert lines == expected[1.0] and decode == dataclasses.asdict(OWN.replace(length_penalty=1.0))
    assert "length_penalty=1.0 as given; max_len_a=0.5, the model's own" in note
    _, note, decode = translate_cli(models["tuned"], tmp_path, "decode=greedy", "decode.max_len_a=1.2")
    assert (decode["beam_size"], decode["length_penalty"], decode["max_len_a"]) == (1, 3.0, 1.2)
    lines, note, _ = translate_cli(models["plain"], tmp_path)
    assert lines == expected[1.0] and "the built-in defaults" in note and "holds no tuned values" in note


@pytest.mark.slow
def test_an_exported_model_carries_and_uses_them(models: dict[str, Path], tmp_path: Path, caplog) -> None:
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install '.[export]'")
    exported = tmp_path / "exported"
    result = run_module(
        "seq2seq.cli.export", f"checkpoint={models['tuned']}", f"output_dir={exported}", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((exported / "seq2seq.json").read_text())["tuned_decoding"] == TUNED
    with caplog.at_level("INFO", logger="seq2seq.inference.translator"):
        translator = Translator.from_checkpoint(exported)
        given = Translator.from_checkpoint(exported, options={"length_penalty": 1.5})
    assert translator.options == OWN and given.options == OWN.replace(length_penalty=1.5)
    (note, _) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("decoding:")]
    assert f"stored in {exported / 'seq2seq.json'} (tuned with our GNMT length penalty" in note

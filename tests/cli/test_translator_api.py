"""The Python Translator gives seq2seq-translate's output (it is the same code); the export CLI round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_module
from test_translate_cli import MIXED_LINES, translate

from seq2seq import Translator
from seq2seq.errors import UserError


@pytest.mark.parametrize("long_lines", ["truncate", "split"])
def test_translator_equals_the_cli_on_hostile_input(finished_run: Path, tmp_path: Path, long_lines: str):
    result, output = translate(
        finished_run, tmp_path, MIXED_LINES, None, "decode=beam", f"long_lines={long_lines}"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    translator = Translator.from_checkpoint(
        finished_run / "last.pt", max_input_tokens=64, long_lines=long_lines
    )
    assert translator.translate(MIXED_LINES) == output.read_text(encoding="utf-8").split("\n")[:-1]


def test_nbest_scores_equal_the_cli(finished_run: Path, tmp_path: Path):
    lines = [line for line in MIXED_LINES if line.strip()][:3]
    result, output = translate(finished_run, tmp_path, lines, None, "decode.beam_size=4", "decode.nbest=3")
    assert result.returncode == 0, result.stderr[-2000:]
    expected: list[list[tuple[str, float]]] = [[] for _ in lines]
    for row in output.read_text(encoding="utf-8").splitlines():
        index, text, score = row.split(" ||| ")
        expected[int(index)].append((text, float(score)))
    translator = Translator.from_checkpoint(finished_run / "last.pt", max_input_tokens=64)
    got = translator.translate(lines, beam_size=4, nbest=3, return_scores=True)
    assert [[text for text, _ in nbest] for nbest in got] == [
        [text for text, _ in nbest] for nbest in expected
    ]
    for mine, cli in zip(got, expected):
        assert [round(score, 4) for _, score in mine] == [score for _, score in cli]


def test_translator_arguments_are_checked(finished_run: Path):
    translator = Translator.from_checkpoint(finished_run / "last.pt")
    assert translator.translate([]) == [] and translator.translate([""]) == [""]
    with pytest.raises(UserError, match="beam_size='5' must be int"):
        translator.translate(["the dog"], beam_size="5")
    with pytest.raises(UserError, match="engine='onnx' is not supported"):
        Translator.from_checkpoint(finished_run / "last.pt", engine="onnx")
    with pytest.raises(UserError, match="not a CTranslate2 model directory"):
        Translator.from_checkpoint(finished_run, engine="ctranslate2")


def test_export_cli_then_translate_cli_with_the_exported_model(finished_run: Path, tmp_path: Path):
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install '.[export]'")
    exported = tmp_path / "exported"
    result = run_module(
        "seq2seq.cli.export", f"checkpoint={finished_run / 'last.pt'}", f"output={exported}", cwd=tmp_path
    )
    assert result.returncode == 0 and (exported / "model.bin").is_file(), result.stderr[-2000:]
    lines = ["the man sees the dog", "", "a woman finds the house"]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    outputs = {}
    for name, checkpoint in (("torch", finished_run / "last.pt"), ("ctranslate2", exported)):
        target = tmp_path / f"{name}.txt"
        result = run_module(
            "seq2seq.cli.translate", f"checkpoint={checkpoint}", f"input={source}", f"output={target}",
            "decode=greedy", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        outputs[name] = target.read_text(encoding="utf-8")
    assert outputs["torch"] == outputs["ctranslate2"] and outputs["torch"].split("\n")[1] == ""
    again = run_module(
        "seq2seq.cli.export", f"checkpoint={finished_run / 'last.pt'}", f"output={exported}", cwd=tmp_path
    )
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "force=true" in again.stderr

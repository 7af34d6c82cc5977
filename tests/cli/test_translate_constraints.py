"""seq2seq-translate constraints=FILE / glossary=FILE / avoid=FILE: every translation holds its phrases and
none holds an avoided one, the output equals the Translator's, JSON lines and the report say what was
met, each kind of bad constraint input is one error line naming its line, and a warning says why
phrases were missed."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from test_translate_confidence import run_translate
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.errors import UserError
from seq2seq.inference.constraint_input import phrase_tokens

LINES = ["in the beginning god created heaven", "", "the night was good", "water and land"]
PHRASES = ["god\tlight", "", "day", ""]  # one line per input line; tabs between phrases
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=128, seed=3)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "model.pt", model, tokenizer, step=3)


def has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_every_line_holds_its_phrases_as_the_translator_gives_them(checkpoint, tmp_path):
    constraints = write(tmp_path / "constraints.txt", PHRASES)
    code, stderr, output = run_translate(
        checkpoint, tmp_path, f"constraints={constraints}", f"report={tmp_path / 'report.json'}", lines=LINES
    )
    assert code == 0, stderr[-2000:]
    expected = Translator.from_checkpoint(checkpoint, options=OPTIONS).translate(
        LINES, constraints=[line.split("\t") if line else [] for line in PHRASES]
    )
    assert output == [t.text for t in expected]
    assert has(output[0], "god") and has(output[0], "light") and has(output[2], "day") and output[1] == ""
    report = json.loads((tmp_path / "report.json").read_text())["constraints"]
    assert report == {"sentences": 2, "phrases": 3, "met": 3, "engines": {"torch": 2}}


def test_jsonl_says_how_many_phrases_each_line_met(checkpoint, tmp_path):
    constraints = write(tmp_path / "constraints.txt", PHRASES)
    code, stderr, output = run_translate(
        checkpoint, tmp_path, f"constraints={constraints}", "confidence=true", "confidence_format=jsonl",
        lines=LINES,
    )  # fmt: skip
    assert code == 0, stderr[-2000:]
    records = [json.loads(line) for line in output]
    assert [(r.get("constraints_met"), r.get("constraints_total")) for r in records] == [
        (2, 2), (None, None), (1, 1), (0, 0),
    ]  # fmt: skip
    assert records[0]["engine"] == "torch"


def test_a_glossary_adds_its_terms_and_avoided_phrases_never_appear(checkpoint, tmp_path):
    glossary = write(tmp_path / "glossary.tsv", ["# source\ttarget", "beginning\tlight", "water\tearth"])
    code, stderr, plain = run_translate(checkpoint, tmp_path, lines=LINES)
    assert code == 0, stderr[-2000:]
    words = [word for line in plain for word in line.split()]
    avoided = max(set(words), key=words.count)  # the tiny model's favourite word ("heaven")
    assert avoided == "heaven"
    avoid = write(tmp_path / "avoid.txt", [avoided])
    code, stderr, output = run_translate(
        checkpoint, tmp_path, f"glossary={glossary}", f"avoid={avoid}", lines=LINES
    )
    assert code == 0, stderr[-2000:]
    assert has(output[0], "light") and has(output[3], "earth")
    assert not any(has(line, avoided) for line in output)


@pytest.mark.parametrize(
    ("lines", "overrides", "message"),
    [
        (PHRASES[:3], [], r"got 3 constraint lines for 4 input lines"),
        (["god\t\tlight", "", "", ""], [], r"constraints line 1: a phrase is empty"),
        (
            ["", "", "god\tday", ""],
            ["decode=greedy"],
            r"constraints line 3: 2 phrases, more than the beam of 1",
        ),
        (["", "", "", "day\tgod\tlight\twater\tland\tnight"], [], r"constraints line 4: 6 phrases"),
        (["god", "", "", ""], ["avoid={avoid}"], r"constraints line 1: 'god' is both required and avoided"),
        (
            ["", "", "light\tgod water", ""],
            ["avoid={avoid}"],
            r"constraints line 3: the phrase 'god water' contains the avoided phrase 'god', so it can never",
        ),
        (["", "Jehová", "", ""], [], r"constraints line 2: the phrase 'Jehová' has characters the target"),
    ],
)
def test_bad_constraint_input_is_one_line_naming_the_line(checkpoint, tmp_path, lines, overrides, message):
    constraints = write(tmp_path / "constraints.txt", lines)
    avoid = write(tmp_path / "avoid.txt", ["god"])
    settings = [setting.format(avoid=avoid) for setting in overrides]
    code, stderr, output = run_translate(
        checkpoint, tmp_path, f"constraints={constraints}", *settings, lines=LINES
    )
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and re.search(message, errors[0]), stderr[-2000:]
    assert output is None  # nothing written


def test_a_phrase_the_tokenizer_drops_is_refused():
    class Empty:
        unk_id = 1
        prefix = ()

        def encode(self, text: str) -> list[int]:
            return []

    with pytest.raises(UserError, match=r"^constraints line 2: the phrase '\.' becomes no target pieces"):
        phrase_tokens(".", Empty(), where="constraints line 2")


def test_the_translator_refuses_a_phrase_holding_an_avoided_one(checkpoint):
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    with pytest.raises(
        UserError, match=r"^constraints line 1: the phrase 'god water' contains the avoided phrase 'water'"
    ):
        translator.translate(LINES[:1], constraints=[["god water"]], avoid=["water"])
    assert has(translator.translate(LINES[:1], constraints=[["god"]], avoid=["water"])[0].text, "god")


def unmet_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "seq2seq.inference.constraint_input"]


def test_god_and_gods_are_met_and_a_missed_phrase_names_its_cause(checkpoint, caplog):
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    with caplog.at_level(logging.WARNING, logger="seq2seq.inference.constraint_input"):
        found = translator.translate(LINES[:2], constraints=[["god", "gods"], []], confidence=True)
    assert has(found[0].text, "god") and has(found[0].text, "gods") and found[0].constraints_met == 2
    assert not unmet_warnings(caplog)
    blocked = Translator.from_checkpoint(checkpoint, options={**OPTIONS, "no_repeat_ngram_size": 1})
    with caplog.at_level(logging.WARNING, logger="seq2seq.inference.constraint_input"):
        found = blocked.translate(LINES[:1], constraints=[["god", "gods"]], confidence=True)
    assert found[0].constraints_met == 1  # "god" and "gods" need the piece "▁god" twice
    (warning,) = unmet_warnings(caplog)
    assert (
        warning.startswith("1 translation(s) reached the length limit")
        and "no_repeat_ngram_size=1" in warning
    )

"""seq2seq-translate confidence=true: the confidence column (tsv: after the translation and the score,
before the alignment) and the JSON lines (confidence_format=jsonl) hold the Translator's own values
(translate(..., confidence=True)), one output line per input line whatever the input (empty
lines, lines split into pieces), for single-best and n-best output; bad settings are one-line errors.

Most runs call the command's function in this process on the config Hydra composes (a subprocess costs
a Python start-up each); one runs as a user runs it, stdin to stdout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commands import MIXED_LINES, error_line, run_module
from in_process import translate_lines
from tiny_models import sentences
from tiny_translator import tiny_translator_fixtures

from seq2seq import Translator
from seq2seq.inference.confidence import Translation

LINES = [*sentences(4, seed=1), "", "   ", "the dog 🐕 sees the cat"]  # blank lines stay blank
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # the Translator's side of SHORT
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12"]


checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=3, sharpness=4.0, max_positions=128)


def run_translate(
    checkpoint: Path, tmp_path: Path, *overrides: str, lines: list[str] = LINES
) -> tuple[int, str, list[str] | None]:
    """The command's function on `lines` -> (exit code, stderr, output lines or None if none written)."""
    return translate_lines(tmp_path, lines, f"checkpoint={checkpoint}", *SHORT, *overrides)


def record(translation: Translation) -> dict:
    return translation.to_json()


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_tsv_puts_the_confidence_after_the_translation(checkpoint, translator, tmp_path, decode):
    code, stderr, output = run_translate(checkpoint, tmp_path, f"decode={decode}", "confidence=true")
    assert code == 0, stderr[-2000:]
    beam_size = 1 if decode == "greedy" else None
    expected = translator.translate(LINES, beam_size=beam_size, confidence=True)
    assert output == [
        f"{t.text}\t{t.confidence:.4f}" if line.strip() else "" for line, t in zip(LINES, expected)
    ]
    (tmp_path / "plain").mkdir()
    plain = run_translate(checkpoint, tmp_path / "plain", f"decode={decode}")[2]
    assert [line.split("\t")[0] for line in output] == plain  # the same translations


def test_tsv_column_order_score_confidence_alignment(checkpoint, translator, tmp_path):
    code, stderr, output = run_translate(
        checkpoint, tmp_path, "confidence=true", "scores=true", "alignment=true"
    )
    assert code == 0, stderr[-2000:]
    expected = translator.translate(LINES, confidence=True)
    for line, given, translation in zip(output, LINES, expected):
        if not given.strip():
            assert line == ""
            continue
        text, score, confidence, alignment = line.split("\t")
        assert (text, score, confidence) == (
            translation.text,
            f"{translation.score:.4f}",
            f"{translation.confidence:.4f}",
        )
        assert all(len(pair.split("-")) == 2 for pair in alignment.split())


def test_jsonl_holds_the_translators_values(checkpoint, translator, tmp_path):
    code, stderr, output = run_translate(checkpoint, tmp_path, "confidence=true", "confidence_format=jsonl")
    assert code == 0, stderr[-2000:]
    assert len(output) == len(LINES)
    records = [json.loads(line) for line in output]
    expected = translator.translate(LINES, confidence=True)
    assert records == [record(t) for t in expected]
    for line, given, found in zip(output, LINES, records):
        assert list(found) == ["text", "confidence", "mean_log_prob", "tokens", "token_probs", "translation"]
        if given.strip():
            assert found["tokens"][-1] == "</s>" and len(found["tokens"]) == len(found["token_probs"])
            assert "\\u" not in line  # ensure_ascii=False: pieces are written as they are
        else:
            assert found == {"text": "", "confidence": None, "mean_log_prob": None, "tokens": [],
                             "token_probs": [], "translation": ""}  # fmt: skip
    with_scores = run_translate(
        checkpoint, tmp_path, "confidence=true", "confidence_format=jsonl", "scores=true"
    )[2]
    scores = [json.loads(line)["score"] for line in with_scores]
    assert scores == [round(t.score, 4) if line.strip() else None for line, t in zip(LINES, expected)]


def test_nbest_jsonl_and_tsv(checkpoint, translator, tmp_path):
    code, stderr, output = run_translate(
        checkpoint, tmp_path, "decode.nbest=3", "confidence=true", "confidence_format=jsonl"
    )
    assert code == 0, stderr[-2000:]
    expected = [t.nbest for t in translator.translate(LINES, nbest=3, confidence=True)]
    assert len(output) == len(LINES)
    assert [json.loads(line) for line in output] == [  # per line, the list of its n-best records, best first
        [{**record(t), "score": round(t.score, 4) if line.strip() else None} for t in ranked]
        for ranked, line in zip(expected, LINES)  # an empty line was not searched: score null
    ]
    code, stderr, moses = run_translate(checkpoint, tmp_path, "decode.nbest=3", "confidence=true")
    assert code == 0, stderr[-2000:]
    given = [index for index, line in enumerate(LINES) if line.strip()]
    assert [line for line in moses if line.split(" ||| ")[0] in map(str, given)] == [
        f"{index} ||| {t.text} ||| {t.score:.4f} ||| {t.confidence:.4f}"
        for index in given
        for t in expected[index]
    ]
    assert [line for line in moses if line.split(" ||| ")[0] == "4"] == ["4 |||  ||| 0.0000 ||| "]


def test_split_lines_keep_one_line_each(checkpoint, translator, tmp_path):
    lines = ["in the beginning", " ".join(["god created heaven and earth"] * 20), ""]
    settings = ["long_lines=split", "max_input_tokens=16", "decode=greedy", "confidence=true"]
    code, stderr, output = run_translate(
        checkpoint, tmp_path, *settings, "confidence_format=jsonl", lines=lines
    )
    assert code == 0, stderr[-2000:]
    split = Translator.from_checkpoint(checkpoint, options=OPTIONS, max_input_tokens=16, long_lines="split")
    expected = split.translate(lines, beam_size=1, confidence=True)
    records = [json.loads(line) for line in output]
    assert records == [record(t) for t in expected]
    assert records[1]["tokens"].count("</s>") > 1 and records[0]["tokens"].count("</s>") == 1
    code, stderr, tsv = run_translate(checkpoint, tmp_path, *settings, "scores=true", lines=lines)
    assert code == 0, stderr[-2000:]
    assert tsv[1] == f"{expected[1].text}\t{expected[1].score:.4f}\t{expected[1].confidence:.4f}"
    assert len(tsv) == 3 and tsv[2] == ""


def test_mixed_lines_keep_the_line_count(checkpoint, tmp_path):
    code, stderr, output = run_translate(
        checkpoint,
        tmp_path,
        "confidence=true",
        "confidence_format=jsonl",
        "max_input_tokens=64",
        lines=MIXED_LINES,
    )
    assert code == 0, stderr[-2000:]
    assert len(output) == len(MIXED_LINES)
    records = [json.loads(line) for line in output]
    assert [r["confidence"] is None for r in records] == [not line.strip() for line in MIXED_LINES]


@pytest.mark.parametrize(
    ("setting", "message"),
    [("confidence=maybe", "confidence='maybe' must be true or false"),
     ("confidence_format=csv", "confidence_format='csv' is not supported; choose tsv or jsonl")],
)  # fmt: skip
def test_bad_settings_are_one_line_errors(checkpoint, tmp_path, setting, message):
    code, stderr, output = run_translate(checkpoint, tmp_path, "confidence=true", setting)
    assert code == 2 and output is None
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {message}"] and "Traceback" not in stderr


@pytest.mark.slow
def test_the_command_as_a_user_runs_it(checkpoint, translator, tmp_path):
    stdin = "".join(line + "\n" for line in LINES).encode()
    settings = [*SHORT, "confidence=true", "confidence_format=jsonl", "log_level=warning"]
    result = run_module(
        "seq2seq.cli.translate", f"checkpoint={checkpoint}", *settings, cwd=tmp_path, stdin=stdin
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.decode("utf-8").split("\n")[:-1]
    assert [json.loads(line) for line in lines] == [
        record(t) for t in translator.translate(LINES, confidence=True)
    ]
    refused = run_module("seq2seq.cli.translate", f"checkpoint={checkpoint}", "confidence=2", cwd=tmp_path)
    assert "confidence=2 must be true or false" in error_line(refused)

"""seq2seq-translate's input policy: one output line per input line, whatever the input holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from commands import MIXED_LINES, run_module, translate


@pytest.mark.slow
@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_line_count_is_kept_on_hostile_input(finished_run: Path, tmp_path: Path, decode: str) -> None:
    result, output = translate(finished_run, tmp_path, MIXED_LINES, None, f"decode={decode}")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = output.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(MIXED_LINES)
    assert lines[1] == "" and lines[2] == ""  # empty and whitespace-only lines stay empty
    assert "truncated" in result.stderr  # the 5,000-word line was cut to the limit, and the log says so


@pytest.mark.slow
def test_each_line_is_translated_as_if_alone(finished_run: Path, tmp_path: Path) -> None:
    _, together = translate(finished_run, tmp_path, MIXED_LINES, None, "decode=greedy")
    batch = together.read_text().split("\n")
    for index in (0, 5, 7):
        alone_dir = tmp_path / f"alone{index}"
        alone_dir.mkdir()
        _, alone = translate(finished_run, alone_dir, [MIXED_LINES[index]], None, "decode=greedy")
        assert alone.read_text().split("\n")[0] == batch[index]


@pytest.mark.slow
def test_invalid_utf8_is_an_error_naming_the_line(finished_run: Path, tmp_path: Path) -> None:
    raw = b"the man\nthe \xff\xfe dog\nthe cat\n"
    result, output = translate(finished_run, tmp_path, None, raw)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error:") and "line 2" in result.stderr
    assert "Traceback" not in result.stderr and not output.exists()
    result, output = translate(finished_run, tmp_path, None, raw, "encoding_errors=replace")
    assert result.returncode == 0 and len(output.read_text().split("\n")) == 4


@pytest.mark.slow
def test_long_line_policies(finished_run: Path, tmp_path: Path) -> None:
    lines = ["the man", " ".join(["the dog sees the cat"] * 40), "the king"]
    result, _ = translate(finished_run, tmp_path, lines, None, "long_lines=error")
    assert result.returncode == 2 and "input line 2 has" in result.stderr and "long_lines=" in result.stderr
    result, output = translate(finished_run, tmp_path, lines, None, "long_lines=split", "decode=greedy")
    assert result.returncode == 0 and len(output.read_text().split("\n")) == 4


@pytest.mark.slow
def test_nbest_scores_alignment_and_pictures(finished_run: Path, tmp_path: Path) -> None:
    lines = ["the man sees the dog", "a cat"]
    result, output = translate(finished_run, tmp_path, lines, None, "decode=beam", "decode.nbest=3")
    assert result.returncode == 0, result.stderr[-2000:]
    nbest = output.read_text().strip().split("\n")
    assert [line.split(" ||| ")[0] for line in nbest] == ["0", "0", "0", "1", "1", "1"]
    scores = [float(line.split(" ||| ")[2]) for line in nbest[:3]]
    assert scores == sorted(scores, reverse=True)
    pictures = tmp_path / "attention"
    result, output = translate(
        finished_run, tmp_path, lines, None, "scores=true", "alignment=true", f"attention_dir={pictures}"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    for line in output.read_text().strip().split("\n"):
        _text, score, alignment = line.split("\t")
        assert float(score) <= 0
        assert all(len(pair.split("-")) == 2 for pair in alignment.split())
    assert sorted(p.name for p in pictures.glob("*.png")) == ["000001.png", "000002.png"]


@pytest.mark.slow
def test_sampling_is_reproducible_and_seeded(finished_run: Path, tmp_path: Path) -> None:
    lines = ["the man sees the dog", "", "a woman finds the house"] * 3
    outputs = {}
    for name, seed in (("first", 1), ("again", 1), ("other", 2)):
        work = tmp_path / name
        work.mkdir()
        result, output = translate(
            finished_run, work, lines, None, "decode=sample", "decode.temperature=3.0", f"decode.seed={seed}"
        )
        assert result.returncode == 0, result.stderr[-2000:]
        outputs[name] = output.read_text(encoding="utf-8").split("\n")
        assert len(outputs[name]) - 1 == len(lines) and outputs[name][1] == ""
    assert outputs["first"] == outputs["again"]  # same seed, same samples
    assert outputs["first"] != outputs["other"]  # at temperature 3 another seed samples differently


@pytest.mark.slow
def test_wrong_decode_value_is_one_error_line(finished_run: Path, tmp_path: Path) -> None:
    result, output = translate(finished_run, tmp_path, ["the man"], None, "decode=sample", "decode.seed=abc")
    assert result.returncode == 2 and "Traceback" not in result.stderr and not output.exists()
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line == "error: decode.seed='abc' must be int; e.g. decode.seed=0"


@pytest.mark.slow
def test_stdin_to_stdout(finished_run: Path, tmp_path: Path) -> None:
    result = run_module(
        "seq2seq.cli.translate",
        f"checkpoint={finished_run / 'last.pt'}",
        "decode=greedy",
        cwd=tmp_path,
        stdin=b"the man\n\nthe dog\n",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.decode().count("\n") == 3


@pytest.mark.slow
def test_missing_or_corrupt_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    for name, expected in (("missing.pt", "does not exist"), ("bad.pt", "corrupt or truncated")):
        result = run_module(
            "seq2seq.cli.translate", f"checkpoint={tmp_path / name}", cwd=tmp_path, stdin=b"x\n"
        )
        assert result.returncode == 2 and expected in result.stderr.decode()
        assert b"Traceback" not in result.stderr

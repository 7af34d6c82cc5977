"""seq2seq-score on files the test writes: text and JSON output, stdin, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from seq2seq.cli.score import main

HYPS = ["the cat sat on the mat", "a quick brown fox", "hello world"]
REFS = ["the cat is on the mat", "the quick brown fox jumps", "hello world"]


def _command() -> list[str]:
    script = Path(sys.executable).with_name("seq2seq-score")
    return [str(script)] if script.exists() else [sys.executable, "-m", "seq2seq.cli.score"]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_text_and_json_output(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "ref.txt", REFS)
    main([str(hyp), str(ref)])
    text = capsys.readouterr().out
    assert f"BLEU = {sacrebleu.corpus_bleu(HYPS, [REFS]).score:.2f}" in text
    assert "chrF2 = " in text and "TER = " in text and "signature: nrefs:1|case:mixed" in text
    main([str(hyp), str(ref), str(ref), "--json", "--metrics", "bleu,chrf"])
    results = json.loads(capsys.readouterr().out)
    assert list(results) == ["bleu", "chrf"]
    assert results["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS, REFS]).score)
    assert results["bleu"]["signature"].startswith("nrefs:2|")


@pytest.mark.slow
def test_console_script_reads_stdin(tmp_path):
    ref = _write(tmp_path / "ref.txt", REFS)
    done = subprocess.run(
        [*_command(), "-", str(ref), "--json", "--metrics", "bleu"],
        input="\n".join(HYPS),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout)["bleu"]["score"] == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, [REFS]).score
    )


@pytest.mark.slow
def test_mismatched_line_counts_exit_2_with_one_line(tmp_path):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "short.txt", REFS[:2])
    done = subprocess.run([*_command(), str(hyp), str(ref)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"{hyp} has 3 lines but {ref} has 2" in lines[0]


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (b"fine\n\xc3\x28 broken\n", [], "line 2 is not valid UTF-8"),
        (None, [], "does not exist"),
        (b"x\n", ["--metrics", "bleu,rouge"], "unknown metric 'rouge'"),
        (b"x\n", ["--tokenize", "nope"], "not a sacreBLEU tokenizer"),
    ],
)
def test_user_errors_are_one_line(tmp_path, capsys, content, extra, message):
    hyp = tmp_path / "hyp.txt"
    if content is not None:
        hyp.write_bytes(content)
    ref = _write(tmp_path / "ref.txt", ["x"] * (content or b"").count(b"\n"))
    with pytest.raises(SystemExit) as exit_info:
        main([str(hyp), str(ref), *extra])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("error: ")


def test_two_stdin_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["-", "-"])
    assert "only one of HYP and REF" in capsys.readouterr().err


def test_help_mentions_stdin_and_metrics(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "- for stdin" in out and "chrf++" in out and "--json" in out


@pytest.mark.slow
def test_a_reader_that_closes_the_pipe_early_ends_it_quietly(tmp_path):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "ref.txt", REFS)
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head -c0`: every write to stdout fails with EPIPE
    try:
        result = subprocess.run([*_command(), str(hyp), str(ref), "--json"], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120, check=False)  # fmt: skip
    finally:
        os.close(write_end)
    assert result.returncode == 1 and result.stderr == ""

"""seq2seq-qe on hostile input: one score line per input line, or a one-line error naming the problem
(a tiny random QE model saved as seq2seq-qe-train saves one; what it predicts does not matter here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from commands import MIXED_LINES, error_line, run_module
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq.model import build_encoder_only, model_size
from seq2seq.inference.quality import QualityEstimator


@pytest.fixture(scope="module")
def qe_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tiny_tokenizer()
    torch.manual_seed(0)
    vocab = {"src_vocab_size": tokenizer.vocab_size, "tgt_vocab_size": tokenizer.vocab_size}
    sizes = model_size("encoder_only_tiny")
    model = build_encoder_only(**vocab, pad_id=tokenizer.pad_id, **sizes, max_positions=40)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("qe") / "qe.pt", model, tokenizer, step=1)


def score(tmp_path: Path, checkpoint: Path, sources: bytes, translations: bytes, *args: str):
    (tmp_path / "src.txt").write_bytes(sources)
    (tmp_path / "hyp.txt").write_bytes(translations)
    return run_module("seq2seq.cli.qe", f"checkpoint={checkpoint}", f"input={tmp_path / 'src.txt'}",
                      f"hypotheses={tmp_path / 'hyp.txt'}", *args, cwd=tmp_path)  # fmt: skip


def lines(text: list[str]) -> bytes:
    return "".join(line + "\n" for line in text).encode()


@pytest.mark.slow
def test_every_kind_of_line_gets_exactly_one_output_line(tmp_path: Path, qe_checkpoint: Path) -> None:
    translations = ["el hombre ve el perro"] * len(MIXED_LINES)
    translations[-1] = ""  # an empty translation of a real source
    result = score(tmp_path, qe_checkpoint, lines(MIXED_LINES), lines(translations))
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout.split("\n")[:-1]
    assert len(out) == len(MIXED_LINES)
    assert [line == "" for line in out] == [False, True, True, False, False, False, False, True]
    assert all(0.0 <= float(line) <= 1.0 for line in out if line)
    estimator = QualityEstimator.from_checkpoint(qe_checkpoint)
    truncated = estimator.encode(MIXED_LINES, translations).truncated  # the 5,000-word line, at least
    assert truncated >= 1
    assert f"{truncated} pair(s) longer than the model's 40 positions were truncated" in result.stderr
    assert out[0] == f"{estimator.score([MIXED_LINES[0]], [translations[0]])[0]:.4f}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sources", "translations", "args", "message"),
    [
        (b"a\nb\n", b"x\n", (), "has 2 lines but hypotheses=.* has 1; give one translation"),
        (b"a\n\xffb\n", b"x\ny\n", (), r"src.txt line 2 is not valid UTF-8 \(byte 0xff at column 1\)"),
        (b"a\n", b"x\n", ("input=-", "hypotheses=-"), "input and hypotheses cannot both be stdin"),
        (b"a\n", b"x\n", ("input=missing.txt",), "missing.txt does not exist"),
    ],
)
def test_bad_input_is_a_one_line_error(tmp_path: Path, qe_checkpoint: Path, sources, translations, args,
                                       message: str) -> None:  # fmt: skip
    result = score(tmp_path, qe_checkpoint, sources, translations, *args)
    assert re.search(message, error_line(result)), error_line(result)
    assert result.stdout == ""


@pytest.mark.slow
def test_invalid_utf8_can_be_replaced(tmp_path: Path, qe_checkpoint: Path) -> None:
    result = score(tmp_path, qe_checkpoint, b"the man\n\xff\n", b"el hombre\nel\n", "encoding_errors=replace")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout.split("\n")[:-1]) == 2


@pytest.mark.slow
def test_a_translation_checkpoint_or_a_missing_one_is_refused(tmp_path: Path) -> None:
    tokenizer = tiny_tokenizer()
    translation = save_tiny_checkpoint(
        tmp_path / "mt.pt", tiny_model(tokenizer.vocab_size), tokenizer, step=1
    )
    refused = score(tmp_path, translation, b"a\n", b"b\n")
    assert "holds a translation model (encoder_decoder), not a quality-estimation model" in error_line(
        refused
    )
    missing = score(tmp_path, tmp_path / "none.pt", b"a\n", b"b\n")
    assert "none.pt does not exist; train one with seq2seq-qe-train" in error_line(missing)

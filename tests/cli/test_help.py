"""Each Hydra app's --help says how to call it and, for translate, its input policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from commands import run_module


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("seq2seq.cli.translate", ["one output line per input line", "long_lines=truncate", "decode=sample"]),
        ("seq2seq.cli.train", ["model/positional: alibi, learned, rope, sinusoidal", "trainer.resume=PATH"]),
        ("seq2seq.cli.prepare", ["apt-get", "data=parallel_files"]),
        (
            "seq2seq.cli.export",
            ["weight_format=int8", "ALiBi, local windows (model.window)", "target=huggingface"],
        ),
        ("seq2seq.cli.import_model", ["MarianMTModel", "src_lang", "init_from="]),
        ("seq2seq.cli.serve", ["POST /translate", "SIGTERM", "max_body_bytes"]),
        ("seq2seq.cli.backtranslate", ["decode=sample decode.top_k=10", "kill -9", "force=true"]),
        ("seq2seq.cli.distill", ["filter.drop_fraction=0.05", "kill -9", "experiment=student"]),
    ],
)
def test_help_explains_usage_and_policies(module: str, expected: list[str], tmp_path: Path) -> None:
    result = run_module(module, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    for text in expected:
        assert text in result.stdout, f"{text!r} missing from {module} --help"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("seq2seq.cli.score", ["HYP", "REF", "--metrics", "sacrebleu"]),
        ("seq2seq.cli.average", ["--inputs", "--last", "--output", "average_checkpoints.py"]),
    ],
)
def test_the_file_list_tools_say_why_they_take_flags(
    module: str, expected: list[str], tmp_path: Path
) -> None:
    """seq2seq-score and seq2seq-average take --flags, not key=value: their --help says why."""
    result = run_module(module, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    help_text = " ".join(result.stdout.split())
    for text in [*expected, "Why --flags and not key=value", "there is no config to compose"]:
        assert text in help_text, f"{text!r} missing from {module} --help"

"""seq2seq-serve's numeric settings: a bad value is one line naming the setting, before any model loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seq2seq.cli.common import number_setting
from seq2seq.errors import UserError


def test_number_setting_converts_and_checks() -> None:
    assert number_setting("5", setting="batch_wait_ms", kind=float) == 5.0
    assert number_setting(64, setting="max_sentences", minimum=1) == 64
    for value, kind, message in [
        ("abc", float, "batch_wait_ms='abc' must be a number"),
        ("2.5", int, "batch_wait_ms='2.5' must be an integer"),
        (2.5, int, "batch_wait_ms=2.5 must be an integer"),
        (True, int, "batch_wait_ms=True must be an integer"),
        (-1, float, "batch_wait_ms=-1 must be at least 0"),
    ]:
        with pytest.raises(UserError, match="^" + message.replace(".", r"\.") + "$"):
            number_setting(value, setting="batch_wait_ms", kind=kind)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("batch_wait_ms=abc", "error: batch_wait_ms='abc' must be a number"),
        ("max_sentences=0", "error: max_sentences=0 must be at least 1"),
        ("port=70000", "error: port=70000 is not a TCP port; use 1-65535 (0: any free port)"),
    ],
)
def test_bad_serve_settings_are_one_line_errors(override: str, message: str) -> None:
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
    pytest.importorskip("uvicorn", reason="needs the serve extra: pip install '.[serve]'")
    command = [sys.executable, "-m", "seq2seq.cli.serve", "checkpoint=missing.pt", override]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == message

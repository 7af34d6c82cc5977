"""seq2seq-serve's settings: a bad value is one line naming the setting, before any model loads; every
number must be finite and in range; --help names every setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.setting_checks import number_setting
from seq2seq.errors import UserError

SERVE_CONFIG = Path(config_dir()) / "serve.yaml"


def test_number_setting_converts_and_checks() -> None:
    assert number_setting("5", setting="batch_wait_ms", kind=float) == 5.0
    assert number_setting(64, setting="max_sentences", minimum=1) == 64
    assert number_setting(7.0, setting="port", maximum=65535) == 7
    for value, kind, message in [
        ("abc", float, "batch_wait_ms='abc' must be a number"),
        ("2.5", int, "batch_wait_ms='2.5' must be an integer"),
        (2.5, int, "batch_wait_ms=2.5 must be an integer"),
        (True, int, "batch_wait_ms=True must be an integer"),
        (-1, float, "batch_wait_ms=-1 must be at least 0"),
        (float("inf"), float, "batch_wait_ms=inf must be a finite number"),
        (float("-inf"), float, "batch_wait_ms=-inf must be a finite number"),
        (float("nan"), float, "batch_wait_ms=nan must be a finite number"),
        (float("inf"), int, "batch_wait_ms=inf must be a finite number"),
        ("1e400", float, "batch_wait_ms='1e400' must be a finite number"),
        (70000, float, "batch_wait_ms=70000 must be at most 60000"),
    ]:
        with pytest.raises(UserError, match="^" + message.replace(".", r"\.") + "$"):
            number_setting(value, setting="batch_wait_ms", kind=kind, maximum=60000)


def run_serve(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
    pytest.importorskip("uvicorn", reason="needs the serve extra: pip install '.[serve]'")
    pytest.importorskip("prometheus_client", reason="needs the serve extra: pip install '.[serve]'")
    command = [sys.executable, "-m", "seq2seq.cli.serve", "checkpoint=missing.pt", *overrides]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("batch_wait_ms=abc", "error: batch_wait_ms='abc' must be a number"),
        ("max_sentences=0", "error: max_sentences=0 must be at least 1"),
        ("port=70000", "error: port=70000 is not a TCP port; use 1-65535 (0: any free port)"),
        ("batch_wait_ms=inf", "error: batch_wait_ms=inf must be a finite number"),
        ("max_batch_wait_ms=nan", "error: max_batch_wait_ms=nan must be a finite number"),
        ("port=inf", "error: port=inf must be a finite number"),
        ("max_input_tokens=-1", "error: max_input_tokens=-1 must be at least 1"),
        (
            "max_batch_tokens=8192",
            "error: max_batch_tokens was renamed max_tokens; use max_tokens=... instead",
        ),
    ],
)
def test_bad_serve_settings_are_one_line_errors(override: str, message: str, tmp_path: Path) -> None:
    result = run_serve(override, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == message


def settings(*overrides: str) -> dict:
    from seq2seq.cli.serve import read_settings

    cfg = OmegaConf.merge(OmegaConf.load(SERVE_CONFIG), OmegaConf.from_dotlist(list(overrides)))
    return read_settings(cfg)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["request_timeout_s=0"], "request_timeout_s=0 must be at least 0.01"),
        (["request_timeout_s=1e6"], "request_timeout_s=1000000.0 must be at most 86400"),
        (["max_queue=0"], "max_queue=0 must be at least 1"),
        (["error_delay_ms=20000"], "error_delay_ms=20000 must be at most 10000"),
        (["max_tokens=-5"], "max_tokens=-5 must be at least 1"),
        (["num_threads=0"], "num_threads=0 must be at least 1"),
        (["max_chars=1e12"], "max_chars=1000000000000.0 must be at most 1000000"),
        (["api_key=abc", "api_key_env=KEY"], "set api_key or api_key_env, not both"),
        (["api_key_env=SEQ2SEQ_UNSET_KEY"], "api_key_env=SEQ2SEQ_UNSET_KEY, but the environment variable"),
        (["api_key='a b'"], "the API key must be printable ASCII without spaces"),
        (["cors_origins=[https://app.example/]"], "cors_origins: 'https://app.example/' is not an origin"),
        (["cors_origins=[app.example]"], "cors_origins: 'app.example' is not an origin"),
    ],
)
def test_bad_limits_and_security_settings_are_refused(overrides: list[str], message: str) -> None:
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
    with pytest.raises(UserError, match="^" + message.replace(".", r"\.").replace("(", r"\(")):
        settings(*overrides)


def test_good_settings_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
    monkeypatch.setenv("SEQ2SEQ_KEY", "s3cret-key")
    read = settings("api_key_env=SEQ2SEQ_KEY", "cors_origins=[https://a.example,http://localhost:3000]")
    assert read["api_key"] == "s3cret-key" and read["cors_origins"] == [
        "https://a.example",
        "http://localhost:3000",
    ]
    assert (read["max_queue"], read["request_timeout_s"], read["port"]) == (256, 60.0, 8080)
    assert settings()["api_key"] is None and settings()["cors_origins"] == []


@pytest.mark.slow
def test_help_names_every_server_setting(tmp_path: Path) -> None:
    result = run_serve("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    for text in ("max_queue", "request_timeout_s", "api_key", "api_key_env", "cors_origins", "GET /metrics",
                 "Authorization: Bearer", "a second Ctrl-C"):  # fmt: skip
        assert text in result.stdout, f"{text!r} missing from seq2seq-serve --help"

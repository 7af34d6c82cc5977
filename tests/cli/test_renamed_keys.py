"""Renamed command-line keys: a refused one is a one-line error; a deprecated alias still works for one
release, rewritten to its new name with one warning line."""

from __future__ import annotations

import logging
import sys

import pytest

from seq2seq.cli.config.renamed_keys import accept_deprecated_keys, deprecated_key_overrides, renamed_key_error
from seq2seq.errors import UserError

ALIASES = {"prefix": "prefixes", "quantization": "weight_format"}


def test_a_refused_key_is_an_error_naming_the_new_one() -> None:
    error = renamed_key_error(["x=1", "max_batch_tokens=8"], {"max_batch_tokens": "max_tokens"})
    assert error == "max_batch_tokens was renamed max_tokens; use max_tokens=... instead"
    assert renamed_key_error(["max_tokens=8"], {"max_batch_tokens": "max_tokens"}) is None


@pytest.mark.parametrize(
    ("given", "expected", "used"),
    [
        (["prefix=a.txt", "decode=greedy"], ["prefixes=a.txt", "decode=greedy"], ["prefix"]),
        (["+prefix=a.txt"], ["+prefixes=a.txt"], ["prefix"]),
        (["~prefix"], ["~prefixes"], ["prefix"]),
        (["quantization=int8", "force=true"], ["weight_format=int8", "force=true"], ["quantization"]),
        (["prefixes=a.txt", "decode.prefix_lm=x"], ["prefixes=a.txt", "decode.prefix_lm=x"], []),
        (["-m", "prefix=a,b"], ["-m", "prefixes=a,b"], ["prefix"]),
    ],
)
def test_a_deprecated_key_becomes_its_new_name(
    given: list[str], expected: list[str], used: list[str]
) -> None:
    assert deprecated_key_overrides(given, ALIASES) == (expected, used)


def test_the_old_and_the_new_key_together_is_an_error() -> None:
    with pytest.raises(UserError, match="prefix= and prefixes= are the same setting; pass prefixes= only"):
        deprecated_key_overrides(["prefix=a", "prefixes=b"], ALIASES)


def test_the_decorator_rewrites_argv_and_warns_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[list[str]] = []

    @accept_deprecated_keys({"prefix": "prefixes"})
    def main() -> None:
        seen.append(list(sys.argv[1:]))

    monkeypatch.setattr(sys, "argv", ["seq2seq-translate", "checkpoint=x.pt", "prefix=p.txt"])
    with caplog.at_level(logging.WARNING):
        main()
    assert seen == [["checkpoint=x.pt", "prefixes=p.txt"]]
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == ["prefix is deprecated and will stop working in the next release; use prefixes"]


def test_the_decorator_is_silent_without_old_keys(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    @accept_deprecated_keys({"prefix": "prefixes"})
    def main() -> list[str]:
        return list(sys.argv[1:])

    monkeypatch.setattr(sys, "argv", ["seq2seq-translate", "prefixes=p.txt"])
    with caplog.at_level(logging.WARNING):
        assert main() == ["prefixes=p.txt"]
    assert not caplog.records


def test_the_decorator_prints_a_conflict_as_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @accept_deprecated_keys({"prefix": "prefixes"})
    def main() -> None:
        raise AssertionError("not reached")

    monkeypatch.setattr(sys, "argv", ["seq2seq-translate", "prefix=a", "prefixes=b"])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: prefix= and prefixes= are the same setting; pass prefixes= only"
    ]

"""The keys renamed for one vocabulary across commands (command_settings.OLD_NAMES) still work for one
release, each with one warning line: export's output= and format= (output_dir, target), import's input=
(input_dir), shortlist's source= and target= (src_file, tgt_file), serve's threads= (num_threads), qe's
quiet= (log_level, with its values spelled anew); and the one verbosity setting's values."""

from __future__ import annotations

import logging
import sys

import pytest
from commands import run_module

from seq2seq.cli.config.command_settings import OLD_NAMES
from seq2seq.cli.config.command_settings import command as table_command
from seq2seq.cli.config.renamed_keys import (
    NewKeyAndValues,
    accept_deprecated_keys,
    deprecated_key_overrides,
    deprecated_keys,
)
from seq2seq.cli.config.setting_checks import log_level_setting
from seq2seq.errors import UserError, deprecation_message


@pytest.mark.parametrize(
    ("command", "given", "expected"),
    [
        ("seq2seq-export", ["output=x", "format=huggingface"], ["output_dir=x", "target=huggingface"]),
        ("seq2seq-export", ["output_dir=x", "weight_format=int8"], ["output_dir=x", "weight_format=int8"]),
        ("seq2seq-import", ["input=hf/opus", "output=m.pt"], ["input_dir=hf/opus", "output=m.pt"]),
        ("seq2seq-shortlist", ["source=a.en", "target=a.es"], ["src_file=a.en", "tgt_file=a.es"]),
        ("seq2seq-serve", ["threads=4", "decode.beam_size=2"], ["num_threads=4", "decode.beam_size=2"]),
        ("seq2seq-qe", ["quiet=true", "input=a"], ["log_level=warning", "input=a"]),
        ("seq2seq-qe", ["quiet=False"], ["log_level=info"]),
        ("seq2seq-qe", ["+quiet=TRUE"], ["+log_level=warning"]),
    ],
)
def test_an_old_key_becomes_its_new_name(command: str, given: list[str], expected: list[str]) -> None:
    assert deprecated_key_overrides(given, deprecated_keys(command))[0] == expected


def test_a_value_without_a_new_spelling_and_both_names_are_errors() -> None:
    qe = deprecated_keys("seq2seq-qe")
    assert qe == {"quiet": NewKeyAndValues("log_level", {"true": "warning", "false": "info"})}
    with pytest.raises(UserError, match=r"^quiet=maybe: quiet was renamed log_level; pass log_level=\.\.\. "):
        deprecated_key_overrides(["quiet=maybe"], qe)
    with pytest.raises(UserError, match=r"^quiet= and log_level= are the same setting; pass log_level= "):
        deprecated_key_overrides(["quiet=true", "log_level=debug"], qe)
    with pytest.raises(UserError, match=r"^output= and output_dir= are the same setting"):
        deprecated_key_overrides(["output=a", "output_dir=b"], deprecated_keys("seq2seq-export"))


def test_one_warning_line_per_old_key_naming_the_new_value(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[list[str]] = []

    @accept_deprecated_keys({**deprecated_keys("seq2seq-qe"), "threads": "num_threads"})
    def main() -> None:
        seen.append(list(sys.argv[1:]))

    monkeypatch.setattr(sys, "argv", ["seq2seq-qe", "quiet=true", "threads=2", "-m", "threads=3"])
    with caplog.at_level(logging.WARNING):
        main()
    assert seen == [["log_level=warning", "num_threads=2", "-m", "num_threads=3"]]
    assert [r.getMessage() for r in caplog.records] == [
        deprecation_message("quiet=true", "log_level=warning"),
        deprecation_message("threads", "num_threads"),
    ]


def test_the_one_verbosity_setting() -> None:
    assert [log_level_setting(v) for v in ("debug", "INFO", "warning", "error")] == [10, 20, 30, 40]
    with pytest.raises(
        UserError, match=r"^log_level='loud' is not a log level; use debug, info, warning, error$"
    ):
        log_level_setting("loud")


OLD_OVERRIDES = {  # per command: overrides with its old keys, and a line the composed config then holds
    "seq2seq-export": (["checkpoint=a.pt", "output=out", "format=huggingface"], "target: huggingface"),
    "seq2seq-import": (["input=hf/opus", "output=m.pt"], "input_dir: hf/opus"),
    "seq2seq-shortlist": (["checkpoint=a.pt", "source=a.en", "target=a.es", "output=s.pt"], "tgt_file: a.es"),
    "seq2seq-serve": (["checkpoint=a.pt", "threads=2"], "num_threads: 2"),
    "seq2seq-qe": (["checkpoint=a.pt", "input=a", "hypotheses=b", "quiet=true"], "log_level: warning"),
    "seq2seq-translate": (["checkpoint=a.pt", "prefix=p.txt", "quiet=true"], "log_level: warning"),
    "seq2seq-backtranslate": (["checkpoint=a.pt", "input=a", "quiet=false"], "log_level: info"),
    "seq2seq-distill": (["checkpoint=a.pt", "input=a", "quiet=true"], "log_level: warning"),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted({old.command for old in OLD_NAMES}))
def test_the_command_composes_its_old_keys_as_the_new_ones_with_one_line_each(command: str, tmp_path) -> None:
    overrides, line = OLD_OVERRIDES[command]
    result = run_module(table_command(command).module, *overrides, "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert line in result.stdout.splitlines()
    warned = [text for text in result.stderr.splitlines() if "is deprecated" in text]
    used = [
        old
        for old in OLD_NAMES
        if old.command == command and any(o.startswith(f"{old.old}=") for o in overrides)
    ]
    assert len(warned) == len(used) > 0, result.stderr

"""How the server gets its model: the checkpoint file is read once (the languages come from that one
read), and a `max_input_tokens` the model cannot honour is a one-line error, not empty translations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from serving import SERVE

from seq2seq import Translator
from seq2seq.errors import UserError

# Prints a line to stderr each time the process opens the file named by its first argument (the audit
# hook sees every open: builtin open, os.open, torch.load's), then runs the rest of the command line.
WATCH_OPENS = """
import os, runpy, sys
target = os.path.realpath(sys.argv.pop(1))
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.path.realpath(os.fsdecode(args[0])) == target:
            print("CHECKPOINT OPENED", file=sys.stderr, flush=True)
sys.addaudithook(hook)
what = sys.argv.pop(1)
if what == "load_checkpoint":
    from seq2seq.checkpoint import load_checkpoint
    load_checkpoint(target)
else:
    runpy.run_module(what, run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
def test_the_server_reads_the_checkpoint_once(start_server, checkpoint):
    alone = subprocess.run([sys.executable, "-c", WATCH_OPENS, str(checkpoint), "load_checkpoint"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    opens_per_read = alone.stderr.count("CHECKPOINT OPENED")
    assert opens_per_read >= 1
    server = start_server(command=[sys.executable, "-c", WATCH_OPENS, str(checkpoint), "seq2seq.cli.serve"])
    health = httpx.get(f"{server.url}/health").json()
    assert (health["src_lang"], health["tgt_lang"]) == ("en", "xx") == (health["source_language"], health["target_language"])
    assert server.stop() == 0
    assert server.output().count("CHECKPOINT OPENED") == opens_per_read


@pytest.mark.parametrize("bad", [-1, 0, 128, 1000, 2.5, True])
def test_max_input_tokens_outside_what_the_model_reads_is_refused(checkpoint, bad):
    # The model has max_positions=128: sources of 1 to 127 tokens, plus eos.
    with pytest.raises(UserError, match=rf"^max_input_tokens={bad!r} must be an integer from 1 to 127 "):
        Translator.from_checkpoint(checkpoint, max_input_tokens=bad)
    assert Translator.from_checkpoint(checkpoint, max_input_tokens=127).max_input_tokens == 127
    assert Translator.from_checkpoint(checkpoint).max_input_tokens == 127


@pytest.mark.slow
def test_the_server_refuses_max_input_tokens_beyond_the_model_in_one_line(checkpoint, tmp_path: Path):
    command = [*SERVE, f"checkpoint={checkpoint}", "max_input_tokens=500", "port=0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("error: max_input_tokens=500 must be an integer from 1 to 127")
    )

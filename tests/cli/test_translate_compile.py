"""seq2seq-translate compile=: the report says what was asked and whether the step was compiled; a model
compile cannot run is a one-line error naming why, at load time; auto leaves a small input eager.

The command's function runs in this process on the config Hydra composes (as
tests/cli/test_translate_confidence.py does). Compiled outputs themselves are compared with eager ones in
tests/decode/test_compiled_decoding.py, where one compiled model serves every search.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_translate_confidence import run_translate  # the command's function, in this process
from tiny_models import save_tiny_checkpoint, sentences, tiny_decoder_only, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.errors import UserError

LINES = sentences(4, seed=6)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tokenizer, folder = tiny_tokenizer(), tmp_path_factory.mktemp("models")
    models = {
        "encoder_decoder": tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=128),
        "decoder_only": tiny_decoder_only(tokenizer.vocab_size, max_positions=128),
    }
    return {
        name: save_tiny_checkpoint(folder / f"{name}.pt", model, tokenizer, step=2)
        for name, model in models.items()
    }


def test_auto_leaves_a_small_input_eager_and_the_report_says_so(checkpoints, tmp_path) -> None:
    report = tmp_path / "report.json"
    code, stderr, output = run_translate(
        checkpoints["encoder_decoder"], tmp_path, f"report={report}", lines=LINES
    )
    assert code == 0, stderr[-2000:]
    assert len(output) == len(LINES)
    written = json.loads(report.read_text())
    assert (written["compile"], written["compiled"]) == ("auto", False)


@pytest.mark.parametrize("setting", ["true", True])
def test_compile_true_refuses_a_decoder_only_model_when_it_loads(checkpoints, setting) -> None:
    expected = (
        r"compile=true cannot be used here: it compiles encoder-decoder models, and this is decoder_only"
    )
    with pytest.raises(UserError, match=expected):
        Translator.from_checkpoint(checkpoints["decoder_only"], compile=setting)


def test_an_unknown_compile_setting_is_one_line(checkpoints, tmp_path) -> None:
    code, stderr, _ = run_translate(checkpoints["encoder_decoder"], tmp_path, "compile=fast", lines=LINES)
    assert code != 0
    assert (
        stderr.strip().splitlines()[-1] == "error: compile='fast' is not supported; choose auto, true, false"
    )


def test_compile_true_refuses_an_exported_model_before_loading_it(tmp_path) -> None:
    exported = tmp_path / "exported"
    exported.mkdir()
    (exported / "model.bin").write_bytes(b"")  # never read: the setting is refused first
    with pytest.raises(UserError, match=r"compile=true compiles our engine's decoder step; CTranslate2 runs"):
        Translator.from_checkpoint(exported, compile=True)

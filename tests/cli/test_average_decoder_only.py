"""seq2seq-average with decoder-only checkpoints: the mean of two loads with Translator.from_checkpoint as
a decoder-only model (tied weights still one tensor, the family recorded); checkpoints of another family or
other model settings (a causal model and a prefix LM) are a one-line error."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import torch
from tiny_models import sentences, tiny_checkpoints, tiny_decoder_only, tiny_model

from seq2seq import Translator
from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli.average import main
from seq2seq.model import DecoderOnly

OPTIONS = {"beam_size": 1, "max_len_a": 0.0, "max_len_b": 12}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Four tiny models of one tokenizer, saved at updates 1 to 4 in this order."""
    models = {
        "checkpoint_1": partial(tiny_decoder_only, seed=1, sharpness=4.0),
        "checkpoint_2": partial(tiny_decoder_only, seed=2, sharpness=4.0),
        "prefix_lm": partial(tiny_decoder_only, seed=5, prefix_lm=True),
        "encoder_decoder": partial(tiny_model, seed=6),
    }
    return tiny_checkpoints(tmp_path_factory.mktemp("checkpoints"), models)


def test_the_average_of_two_loads_as_a_decoder_only_model(checkpoints, tmp_path: Path) -> None:
    inputs = [checkpoints["checkpoint_1"], checkpoints["checkpoint_2"]]
    out = tmp_path / "averaged.pt"
    main(["--inputs", *map(str, inputs), "--output", str(out)])
    averaged = load_checkpoint(out)
    assert averaged["model_config"]["family"] == "decoder_only" and averaged["step"] == 2
    tied = averaged["model"]["stack.embedding.weight"], averaged["model"]["output.weight"]
    assert tied[0].data_ptr() == tied[1].data_ptr()  # one tensor in the file, as in the inputs
    states = [load_checkpoint(path)["model"] for path in inputs]
    assert averaged["model"].keys() == states[0].keys()
    for key, value in averaged["model"].items():
        torch.testing.assert_close(value, (states[0][key].double() + states[1][key].double()).div(2).float())
    translator = Translator.from_checkpoint(out, options=OPTIONS)
    model = translator.model
    assert isinstance(model, DecoderOnly) and model.config["family"] == "decoder_only"
    assert all(torch.equal(value, averaged["model"][key]) for key, value in model.state_dict().items())
    assert model.output.weight is model.stack.embedding.weight
    texts = sentences(4, seed=3)
    translations = translator.translate(texts)
    assert all(t.score < 0 for t in translations)
    for path in inputs:  # the average translates as neither input does
        assert Translator.from_checkpoint(path, options=OPTIONS).translate(texts) != translations


@pytest.mark.parametrize(
    ("other", "message"),
    [
        ("encoder_decoder", "holds a model of the family encoder_decoder but"),
        ("prefix_lm", "was trained with other model settings than"),
    ],
)
def test_checkpoints_of_another_model_are_one_error_line(checkpoints, tmp_path: Path, capsys, other, message):
    out = tmp_path / "averaged.pt"
    with pytest.raises(SystemExit) as stop:
        main(["--inputs", str(checkpoints["checkpoint_2"]), str(checkpoints[other]), "--output", str(out)])
    assert stop.value.code == 2 and not out.exists()
    errors = capsys.readouterr().err.splitlines()
    assert (
        len(errors) == 1
        and message in errors[0]
        and "average checkpoints of the same model only" in errors[0]
    )

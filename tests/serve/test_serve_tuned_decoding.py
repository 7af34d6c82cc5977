"""seq2seq-serve on a checkpoint with decoding settings of its own (trainer.tune_decoding): requests are
answered with them, unless the server's settings or the request set the length penalty."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import torch
from tiny_models import sentences
from tuned_model import write_checkpoint

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions

SERVER = SearchOptions(beam_size=5, max_len_a=0.0, max_len_b=12)  # the test server's settings
TEXTS = sentences(20, seed=5)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The test server's model made to stop at many lengths (so that the length penalty changes its
    outputs), with and without stored settings."""
    directory = tmp_path_factory.mktemp("tuned")
    return {
        "plain": write_checkpoint(directory / "plain.pt", decoding=None),
        "tuned": write_checkpoint(directory / "tuned.pt"),
    }


@pytest.fixture(scope="module")
def expected(models: dict[str, Path]) -> dict[float, list[str]]:
    translator = Translator.from_checkpoint(models["plain"], options=SERVER)
    with torch.inference_mode():
        outputs = {
            penalty: [str(t) for t in translator.translate(TEXTS, length_penalty=penalty)]
            for penalty in (3.0, 1.0)
        }
    assert sum(a != b for a, b in zip(outputs[3.0], outputs[1.0])) >= 10  # the penalty shows in outputs
    return outputs


def translations(server, **fields) -> list[str]:
    response = httpx.post(f"{server.url}/translate", json={"texts": TEXTS, **fields}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["translations"]


@pytest.mark.slow
def test_requests_get_the_models_own_length_penalty_unless_they_set_one(start_server, models, expected):
    server = start_server(f"checkpoint={models['tuned']}")
    assert translations(server) == expected[3.0]
    assert translations(server, length_penalty=1.0) == expected[1.0]  # the request's own wins
    assert translations(server, length_penalty=3) == expected[3.0]  # an integer is a number too
    (note,) = [line for line in server.output().splitlines() if "decoding: " in line]
    # decode.max_len_a=0 is set on the test server's command line, the length penalty is not
    assert "max_len_a=0.0 as given; length_penalty=3.0, the model's own (tuned on 500 dev sentences" in note


@pytest.mark.slow
def test_the_servers_setting_wins_over_the_models_own(start_server, models, expected):
    server = start_server(f"checkpoint={models['tuned']}", "decode.length_penalty=1.0")
    assert translations(server) == expected[1.0]
    assert translations(server, length_penalty=3.0) == expected[3.0]
    (note,) = [line for line in server.output().splitlines() if "decoding: " in line]
    assert "length_penalty=1.0, max_len_a=0.0 as given; the model's own (length_penalty=3.0" in note


@pytest.mark.slow
def test_a_bad_length_penalty_is_refused(start_server):
    server = start_server("error_delay_ms=0")
    for value, shown in (("high", '"high"'), (-1, "-1"), (11, "11"), (True, "true"), (None, "null")):
        body = {"texts": "in the beginning", "length_penalty": value}
        response = httpx.post(f"{server.url}/translate", json=body)
        assert response.status_code == 422
        assert response.json()["error"] == f'"length_penalty" must be a number from 0 to 10, got {shown}'

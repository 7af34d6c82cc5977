"""One translation path: the same requests (a language per text on a multilingual model, markup,
constraints, nbest 3, confidence) give identical results through Translator.translate, seq2seq-translate
(jsonl), one server request and the corpus API, because all four run seq2seq.inference.pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from in_process import translate_lines
from multilingual_model import own_multilingual_checkpoint

from seq2seq import Translator
from seq2seq.inference.confidence import nbest_json

TEXTS = ["the man sees the dog", "in the <b>beginning</b> god created", "el perro ve", "", "good night"]
LANGUAGES = [("en", "es"), ("en", "fr"), ("es", "fr"), ("en", "es"), ("en", "fr")]
CONSTRAINTS = [["good"], [], [], [], ["the"]]
SEARCH = {"beam_size": 3, "nbest": 3, "max_len_a": 0.0, "max_len_b": 8}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("one_path") / "model.pt")


@pytest.fixture(scope="module")
def expected(checkpoint: Path) -> list[list[dict]]:
    """Per text, its n-best records (the one JSON shape of the CLI and the server), from Python."""
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    found = translator.translate(
        TEXTS, src_lang=[src for src, _ in LANGUAGES], tgt_lang=[tgt for _, tgt in LANGUAGES],
        constraints=CONSTRAINTS, confidence=True,
    )  # fmt: skip
    assert "<b>" in found[1].text and len(found[0].nbest) == 3 and found[0].constraints_total == 1
    assert found[3].text == "" and found[0].text != found[4].text
    return [nbest_json(translation.nbest, confidence=True) for translation in found]


def test_the_cli_gives_what_python_gives(
    checkpoint: Path, expected: list[list[dict]], tmp_path: Path
) -> None:
    lines = [f"{src}\t{tgt}\t{text}" if text else "" for text, (src, tgt) in zip(TEXTS, LANGUAGES)]
    constraints = tmp_path / "constraints.tsv"
    constraints.write_text("".join("\t".join(phrases) + "\n" for phrases in CONSTRAINTS), encoding="utf-8")
    settings = [f"decode.{key}={value}" for key, value in SEARCH.items()]
    code, stderr, output = translate_lines(
        tmp_path, lines, f"checkpoint={checkpoint}", "language_columns=[src_lang,tgt_lang]", *settings,
        f"constraints={constraints}", "confidence=true", "confidence_format=jsonl",
    )  # fmt: skip
    assert code == 0, stderr[-2000:]
    found = [json.loads(line) for line in output]
    empty = 3  # an empty input line: one record, not searched (score null)
    assert found[empty] == [{**expected[empty][0], "score": None}]
    assert [records for n, records in enumerate(found) if n != empty] == [
        records for n, records in enumerate(expected) if n != empty
    ]


def test_one_server_request_gives_what_python_gives(checkpoint: Path, expected: list[list[dict]]) -> None:
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.metrics import Metrics
    from seq2seq.serve.requests import Limits

    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=SEARCH))
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    request = {
        "texts": TEXTS, "src_lang": [src for src, _ in LANGUAGES], "tgt_lang": [tgt for _, tgt in LANGUAGES],
        "constraints": CONSTRAINTS, "beam_size": 3, "nbest": 3, "confidence": True,
    }  # fmt: skip
    with TestClient(app) as client:
        answer = client.post("/translate", json=request)
    assert answer.status_code == 200, answer.text
    assert answer.json()["translations"] == expected


def test_the_corpus_api_gives_what_python_gives(checkpoint: Path, tmp_path: Path) -> None:
    """A corpus translates one direction, one best translation per line: the lines of each direction
    come out of distill() as they come out of Translator.translate."""
    from seq2seq.corpus_translation import DistillSettings, distill

    options = {**SEARCH, "nbest": 1}
    for src, tgt in sorted(set(LANGUAGES)):
        lines = [text for text, pair in zip(TEXTS, LANGUAGES) if pair == (src, tgt) and text] + TEXTS[1:2]
        source = tmp_path / f"input.{src}-{tgt}"
        source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        teacher = Translator.from_checkpoint(checkpoint, options=options)
        output = tmp_path / f"distilled.{src}-{tgt}"
        settings = DistillSettings(
            checkpoint=checkpoint, input=source, output_dir=output, src_lang=src, tgt_lang=tgt
        )
        report = distill(teacher, settings)
        corpus = Path(report["outputs"]["tgt"]).read_text(encoding="utf-8").splitlines()
        expected = Translator.from_checkpoint(checkpoint, options=options).translate(
            lines, src_lang=src, tgt_lang=tgt
        )
        assert corpus == [translation.text for translation in expected]

"""The sentence splitter of an Argos Translate package: MiniSBD (what argostranslate runs it with) loads the
ONNX file written here, with no download, and cuts texts where the rules say, in every script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.export.argos_sentences import write_sentence_splitter

minisbd = pytest.importorskip(
    "minisbd", reason="argostranslate's sentence splitter (pip install argostranslate)"
)


@pytest.fixture(scope="module")
def splitter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("minisbd") / "sentences.onnx"
    write_sentence_splitter(path, "en")
    return path


CUTS = {  # a text -> its sentences
    "In the beginning God created the heaven and the earth. And the earth was without form.": [
        "In the beginning God created the heaven and the earth.",
        "And the earth was without form.",
    ],
    'He said "No." Then he left! Really?! Yes': ['He said "No."', "Then he left!", "Really?!", "Yes"],
    "It holds e.g. bread, etc. and 3.14 litres. No more": [
        "It holds e.g. bread, etc. and 3.14 litres.",
        "No more",
    ],
    "  Two  spaces.  And a line\nbreak. End": ["Two  spaces.", "And a line\nbreak.", "End"],
    "天地。「初め。」次に？終わり": ["天地。", "「初め。」", "次に？", "終わり"],
    "हम यहाँ हैं। तुम कहाँ हो?": ["हम यहाँ हैं।", "तुम कहाँ हो?"],
    "no stop at all": ["no stop at all"],
    "Mr. Smith came.": ["Mr.", "Smith came."],  # no list of abbreviations: a capital after a stop starts one
}


@pytest.mark.parametrize("text", sorted(CUTS))
def test_minisbd_cuts_texts_by_the_rules(splitter: Path, text: str) -> None:
    detector = minisbd.SBDetect(str(splitter), use_gpu=False)
    assert detector.sentences(text) == CUTS[text]


def test_the_file_records_its_language_and_minisbds_settings(splitter: Path) -> None:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(splitter), providers=["CPUExecutionProvider"])
    metadata = session.get_modelmeta().custom_metadata_map
    assert metadata["lang_code"] == "en" and json.loads(metadata["lexicon"]) is None
    assert json.loads(metadata["config"])["feat_funcs"] == []
    vocab = json.loads(metadata["vocab"])
    assert vocab["_id2unit"][:2] == ["<PAD>", "<UNK>"] and {".", "。", " ", "a", "é"} <= set(
        vocab["_unit2id"]
    )

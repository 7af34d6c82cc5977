"""CTranslate2 exports of one of our own multilingual models: the target language's token is forced
(CTranslate2's target prefix), so an export translates into each language as the checkpoint does."""

from __future__ import annotations

from pathlib import Path

from multilingual_model import OPTIONS, own_multilingual_checkpoint

from seq2seq import Translator
from seq2seq.export.ctranslate2 import export_ctranslate2

TEXTS = ["in the beginning god created heaven", "the night was good", "water and land"]


def test_an_export_translates_into_each_language_as_the_checkpoint(tmp_path: Path) -> None:
    checkpoint = own_multilingual_checkpoint(tmp_path / "model.pt")
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    ours = Translator.from_checkpoint(checkpoint, options={**OPTIONS, "beam_size": 1})
    theirs = Translator.from_checkpoint(exported, options={**OPTIONS, "beam_size": 1})
    assert theirs.engine.name == "ctranslate2"
    outputs = {}
    for tgt_lang in ("es", "fr"):
        expected = [t.text for t in ours.translate(TEXTS, src_lang="en", tgt_lang=tgt_lang)]
        assert [t.text for t in theirs.translate(TEXTS, src_lang="en", tgt_lang=tgt_lang)] == expected
        outputs[tgt_lang] = expected
    assert outputs["es"] != outputs["fr"]  # the forced token steers the model

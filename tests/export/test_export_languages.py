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


def test_an_export_keeps_the_pair_its_training_recorded(tmp_path: Path) -> None:
    """A server lists and routes an exported one-pair model by the languages its checkpoint recorded."""
    from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", tiny_model(tokenizer.vocab_size), tokenizer,
                                      step=1, config={"data": {"src_lang": "en", "tgt_lang": "es"}})  # fmt: skip
    recorded = Translator.from_checkpoint(export_ctranslate2(checkpoint, tmp_path / "ct2"))
    assert recorded.languages == ("en", "es") and recorded.model_languages().pairs() == [("en", "es")]
    named = Translator.from_checkpoint(export_ctranslate2(checkpoint, tmp_path / "b", languages=("de", "fr")))
    assert named.languages == ("de", "fr")
    unrecorded = own_multilingual_checkpoint(tmp_path / "many.pt")  # its codes, and no recorded pair
    assert Translator.from_checkpoint(export_ctranslate2(unrecorded, tmp_path / "c")).languages is None

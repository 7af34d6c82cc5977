"""src_lang=auto: each text's language detected (seq2seq.inference.language_detection), in Python and
on the command line alike; a text in a language the model does not read is a one-line error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from in_process import translate_lines
from multilingual_model import own_multilingual_checkpoint
from tiny_models import tiny_model_checkpoint

from seq2seq import Translator
from seq2seq.errors import UserError
from seq2seq.inference.language_detection import detect

OPTIONS = {"beam_size": 2, "max_len_a": 0.0, "max_len_b": 8}
ENGLISH = "In the beginning God created the heaven and the earth, and the light was good."
SPANISH = "En el principio creó Dios los cielos y la tierra, y la luz era buena."
GERMAN = "Der Mann sieht den Hund und die Frau im Garten, und sie lachen."


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("detect") / "model.pt")


def test_each_text_gets_its_own_language(checkpoint: Path, tmp_path: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    detected = translator.translate([ENGLISH, SPANISH, ""], src_lang="auto", tgt_lang="fr")
    named = translator.translate([ENGLISH, SPANISH, ""], src_lang=["en", "es", None], tgt_lang="fr")
    assert detected == named
    settings = [
        f"checkpoint={checkpoint}",
        "src_lang=auto",
        "tgt_lang=fr",
        *(f"decode.{k}={v}" for k, v in OPTIONS.items()),
    ]
    code, _, lines = translate_lines(tmp_path, [ENGLISH, SPANISH, ""], *settings)
    assert code == 0 and lines == [t.text for t in named]


def test_a_language_the_model_does_not_read_is_named(checkpoint: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    with pytest.raises(
        UserError, match=r"^input line 2 reads as German \(de\); this model translates from en, es, fr"
    ):
        translator.translate([ENGLISH, GERMAN], src_lang="auto", tgt_lang="es")


def test_a_one_pair_model_reads_its_own_language_only(tmp_path: Path) -> None:
    translator = Translator.from_checkpoint(tiny_model_checkpoint(tmp_path, step=1), options=OPTIONS)
    with pytest.raises(UserError, match=r"^src_lang=auto needs a model that knows the languages it reads"):
        translator.translate([ENGLISH], src_lang="auto")
    translator.languages = ("en", "es")  # what a checkpoint's training config records
    assert translator.translate([ENGLISH], src_lang="auto") == translator.translate([ENGLISH])
    with pytest.raises(UserError, match=r"reads as Spanish \(es\); this model translates from en only"):
        translator.translate([SPANISH], src_lang="auto")


def test_short_texts_get_the_likeliest_served_language() -> None:
    """Lingua is unsure of a few words (\"Dios es amor.\" reads as Polish first): a served language wins
    unless another is at least 70% likely."""
    found = detect(["Dios es amor.", "God is love.", GERMAN], ["en", "es"])
    assert [(item.code, item.iso) for item in found] == [("es", "es"), ("en", "en"), (None, "de")]

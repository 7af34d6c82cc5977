"""segment=sentences (seq2seq.inference.sentences): a paragraph is translated sentence by sentence in one
batch, and the translations joined with the whitespace that stood between the sentences."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest
from tiny_translator import tiny_translator_fixtures

from seq2seq.errors import UserError
from seq2seq.inference.sentences import sentences

checkpoint, translator = tiny_translator_fixtures({"beam_size": 2, "max_len_a": 0.0, "max_len_b": 6}, step=1)
SENTENCES = ["In the beginning God created the heaven.", "And the earth was without form!", "Was it void?"]


def test_a_paragraph_is_its_sentences_joined_with_their_whitespace(translator) -> None:
    paragraph = f"\n  {SENTENCES[0]}  {SENTENCES[1]}\n{SENTENCES[2]}\n"
    alone = [t.text for t in translator.translate(SENTENCES)]
    [found] = translator.translate([paragraph], segment="sentences")
    assert found.text == f"\n  {alone[0]}  {alone[1]}\n{alone[2]}\n"  # the edges too
    [whole] = translator.translate([paragraph])  # segment=none: one sentence, as before
    assert whole.text != found.text


def test_markup_spanning_sentences_stays_well_formed(translator) -> None:
    paragraph = f" <p><b>{SENTENCES[0]} {SENTENCES[1][:9]}</b>{SENTENCES[1][9:]} <i>{SENTENCES[2]}</i></p>"
    [found] = translator.translate([paragraph], segment="sentences", markup="true")
    tags = [element.tag for element in ElementTree.fromstring(f"<r>{paragraph}</r>").iter()]
    assert [element.tag for element in ElementTree.fromstring(f"<r>{found.text}</r>").iter()] == tags
    assert found.text.startswith(" <p>") and found.text.endswith("</p>")


def test_the_segmenter_keeps_every_gap_and_drops_the_edges() -> None:
    assert sentences("  One. Two!\n\nThree?  ", "en") == (["One.", "Two!", "Three?"], [" ", "\n\n"])
    assert sentences("no end here", "eng_Latn") == (["no end here"], [])


def test_a_long_paragraph_stays_within_the_limits(translator) -> None:
    paragraph = " ".join(SENTENCES * 120)  # about 12,000 characters: each sentence within max_input_tokens
    assert len(paragraph) > 10_000
    [found] = translator.translate([paragraph], segment="sentences")
    assert (
        found.text.count("\n") == 0
        and len(translator.encode([paragraph], segment="sentences").sources) == 360
    )


def test_an_unknown_setting_is_one_line(translator) -> None:
    with pytest.raises(UserError, match=r"^segment='words' is not supported; choose none or sentences$"):
        translator.translate(["x"], segment="words")

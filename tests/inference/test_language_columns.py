"""A language per text: seq2seq-translate's language_columns (each input line names its languages) and
Translator.translate's per-text src_lang / tgt_lang run the one pipeline: each text is translated as a
call with its languages translates it, texts of all languages searched together."""

from __future__ import annotations

import pytest
from multilingual_model import OPTIONS, own_multilingual_checkpoint, tagged_sentences

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.language_columns import checked_columns, split_language_columns
from seq2seq.inference.translator import Translator

SEARCH = SearchOptions(beam_size=3, **OPTIONS)
LINES = [
    "en\tes\tthe man sees the dog",
    "",
    "es\tfr\tel perro ve",
    "en\tfr\tthe dog sees the man",
    "en\tes\tgood",
]


@pytest.fixture(scope="module")
def translator(tmp_path_factory: pytest.TempPathFactory) -> Translator:
    checkpoint = own_multilingual_checkpoint(tmp_path_factory.mktemp("own") / "model.pt")
    return Translator.from_checkpoint(checkpoint, options=SEARCH)


def per_text(languages: list[tuple[str | None, str | None]]) -> dict[str, list[str | None]]:
    return {"src_lang": [src for src, _ in languages], "tgt_lang": [tgt for _, tgt in languages]}


def test_mixed_lines_translate_as_one_language_calls(translator: Translator) -> None:
    texts, languages = split_language_columns(LINES, ["src_lang", "tgt_lang"])
    assert texts[1] == "" and languages[2] == ("es", "fr")
    found = translator.translate(texts, max_tokens=64, **per_text(languages))  # small batches: mixed
    mixed = dict(enumerate(t.text for t in found))
    for index, (text, (src_lang, tgt_lang)) in enumerate(zip(texts, languages)):
        if not text:
            assert mixed[index] == ""
            continue
        (alone,) = translator.translate([text], src_lang=src_lang, tgt_lang=tgt_lang)
        assert mixed[index] == alone.text
    outputs = {tgt: translator.translate(["the dog sees the man"], src_lang="en", tgt_lang=tgt)[0].text
               for tgt in ("es", "fr")}  # fmt: skip
    assert outputs["es"] != outputs["fr"]  # the column chose the output


def test_markup_goes_where_a_call_for_the_line_languages_puts_it(translator: Translator) -> None:
    # markup is put back by the Translator that reads the columns, whose own source prefix is empty:
    # each source's language token must still be left out of the alignment (4 of these 40 lines had
    # their tags elsewhere when it was aligned as a word)
    texts = tagged_sentences(40)
    languages = [[("en", "es"), ("es", "fr")][index % 2] for index in range(len(texts))]
    mixed = [t.text for t in translator.translate(texts, max_tokens=64, **per_text(languages))]
    alone = [translator.translate([text], src_lang=src, tgt_lang=tgt)[0].text
             for text, (src, tgt) in zip(texts, languages)]  # fmt: skip
    assert mixed == alone


def test_a_target_column_takes_the_source_language_from_the_call(translator: Translator) -> None:
    texts, languages = split_language_columns(["es\tgood", "fr\tgood"], ["tgt_lang"], src_lang="en")
    assert texts == ["good", "good"] and languages == [("en", "es"), ("en", "fr")]


@pytest.mark.parametrize(
    "line, message",
    [
        ("the man sees the dog", "input line 1 is not src_lang<TAB>tgt_lang<TAB>text"),
        ("en\t\tthe man", "input line 1 is not src_lang<TAB>tgt_lang<TAB>text"),
    ],
)
def test_lines_without_their_columns_are_one_line_errors(line: str, message: str) -> None:
    with pytest.raises(UserError) as error:
        split_language_columns([line], ["src_lang", "tgt_lang"])
    assert message in str(error.value) and "\n" not in str(error.value)


def test_an_unknown_language_names_its_line_and_the_models_codes(translator: Translator) -> None:
    texts, languages = split_language_columns(["en\tes\tgood", "en\tde\tgood"], ["src_lang", "tgt_lang"])
    with pytest.raises(UserError) as error:
        translator.translate(texts, **per_text(languages))
    assert str(error.value).startswith("input line 2 (en -> de): ") and "en, es, fr" in str(error.value)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"language_columns": ["lang"]}, "must be [tgt_lang] or [src_lang,tgt_lang]"),
        ({"language_columns": ["tgt_lang"], "tgt_lang": "es"}, "both choose tgt_lang"),
        ({"language_columns": ["tgt_lang"], "glossary": True}, "glossary= does not combine"),
    ],
)
def test_contradicting_settings_are_refused(values: dict, message: str) -> None:
    given = {"src_lang": None, "tgt_lang": None, "glossary": False, **values}
    with pytest.raises(UserError, match=None) as error:
        checked_columns(given.pop("language_columns"), **given)
    assert message in str(error.value)


def test_prefixes_and_constraints_combine_with_a_language_per_text(translator: Translator) -> None:
    texts = ["the man sees the dog", "the dog sees the man", "good"]
    languages = [("en", "es"), ("en", "fr"), ("en", "es")]
    prefixes, constraints = ["", "the", ""], [[], [], ["good"]]
    mixed = translator.translate(texts, prefixes=prefixes, constraints=constraints, **per_text(languages))
    for index, (src, tgt) in enumerate(languages):
        (alone,) = translator.translate(
            [texts[index]], prefixes=[prefixes[index]], constraints=[constraints[index]], src_lang=src, tgt_lang=tgt
        )
        assert mixed[index].text == alone.text
        assert mixed[index].score == pytest.approx(alone.score, abs=1e-4)

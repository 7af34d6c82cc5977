"""Each cleaning transform on small fixed inputs, with the exact pairs it keeps, changes and removes."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from seq2seq.data.transforms import (
    Deduplicate,
    DropIdentical,
    DropLengthRatio,
    DropRepeats,
    LanguageFilter,
    MosesPunctuation,
    Transform,
    UnicodeNormalize,
    check_transform,
)
from seq2seq.errors import UserError


def test_moses_punctuation_uses_each_sides_rules() -> None:
    pairs = [("He said, “Go now” — and went ; fine .", "Dijo: «Vete» — y se fue ."), ("Plain.", "Llano.")]
    out = MosesPunctuation(src_lang="en", tgt_lang="es")(pairs)
    assert out == [
        ('He said, "Go now" - and went; fine .', 'Dijo: "Vete" - y se fue .'),
        ("Plain.", "Llano."),
    ]
    assert out[1] is pairs[1]  # unchanged pairs come back as they were


def test_unicode_normalize_folds_compatibility_characters() -> None:
    pairs = [("ﬁne Ｈｅｌｌｏ", "x²\u00a0y"), ("café", "ok")]
    assert UnicodeNormalize()(pairs) == [("fine Hello", "x2 y"), ("café", "ok")]
    assert UnicodeNormalize(form="NFC")([("ﬁne", "x²")]) == [("ﬁne", "x²")]
    with pytest.raises(UserError, match="form='NFD' is not supported"):
        UnicodeNormalize(form="NFD")


def test_drop_identical_ignores_case_spacing_and_punctuation() -> None:
    pairs = [("Amen.", "amen"), ("Hello", "Hola"), ("...", "!"), ("The Lord", "the  lord!"), ("3:16", "3.16")]
    assert DropIdentical()(pairs) == [None, ("Hello", "Hola"), None, None, None]


def test_drop_repeats_on_either_side() -> None:
    transform = DropRepeats(max_char_run=3, max_word_run=3)
    pairs = [
        ("aaa bbb", "ok"),  # runs of 3: kept
        ("ok", "Nooooo"),  # a run of 4
        ("The the, THE end", "ok"),  # one word three times, punctuation and case aside
        ("then the the", "ok"),  # "the" only twice: "then" is another word
        ("ok", "ha ha ha"),
    ]
    assert transform(pairs) == [("aaa bbb", "ok"), None, None, ("then the the", "ok"), None]
    with pytest.raises(UserError, match="max_word_run >= 2"):
        DropRepeats(max_word_run=1)


def test_drop_length_ratio_only_judges_long_enough_pairs() -> None:
    transform = DropLengthRatio(max_char_ratio=2, min_chars=10)
    pairs = [("a" * 10, "b" * 5), ("a" * 11, "b" * 5), ("abc", ""), ("", "b" * 10), ("a" * 9, "b")]
    assert transform(pairs) == [("a" * 10, "b" * 5), None, ("abc", ""), None, ("a" * 9, "b")]


def test_deduplicate_keeps_first_occurrences_within_and_across_chunks() -> None:
    dedupe = Deduplicate()
    first = [("a", "x"), ("b", "y"), ("a", "x"), ("a", "z")]
    assert dedupe(first) == [("a", "x"), ("b", "y"), None, ("a", "z")]
    assert dedupe([("b", "y"), ("c", "w"), ("c", "w"), ("a", "z")]) == [None, ("c", "w"), None, None]
    assert dedupe.seen.dtype == np.uint64 and len(dedupe.seen) == 4  # 8 bytes per distinct pair
    assert np.all(np.diff(dedupe.seen.astype(np.float64)) >= 0)  # kept sorted
    dedupe.reset()
    assert dedupe(first) == [("a", "x"), ("b", "y"), None, ("a", "z")]


def test_deduplicate_on_one_side() -> None:
    pairs = [("a", "x"), ("a", "y"), ("b", "x")]
    assert Deduplicate(on="source")(pairs) == [("a", "x"), None, ("b", "x")]
    assert Deduplicate(on="target")(pairs) == [("a", "x"), ("a", "y"), None]
    assert Deduplicate()([("a\nb", "c"), ("a", "b\nc")]) == [("a\nb", "c"), ("a", "b\nc")]


def test_deduplicate_big_chunks_match_a_set() -> None:
    rng = np.random.default_rng(0)
    pairs = [(str(a), str(b)) for a, b in rng.integers(0, 40, size=(500, 2))]
    dedupe, seen, expected = Deduplicate(), set(), []
    for pair in pairs:
        expected.append(None if pair in seen else pair)
        seen.add(pair)
    assert dedupe(pairs[:200]) + dedupe(pairs[200:]) == expected


@pytest.fixture(scope="module")
def language_filter() -> LanguageFilter:
    return LanguageFilter(src_lang="en", tgt_lang="es", languages=["en", "es", "de", "fr"])


def test_language_filter_drops_pairs_with_a_side_in_another_language(language_filter: LanguageFilter) -> None:
    pairs = [
        (
            "The weather is very nice today and we are going to the beach.",
            "Hoy hace muy buen tiempo y vamos a ir a la playa.",
        ),
        (
            "Hoy hace muy buen tiempo y vamos a ir a la playa.",
            "The weather is very nice today and we are going to the beach.",
        ),
        (
            "I would like to order a cup of coffee, please.",
            "Ich möchte bitte eine Tasse Kaffee bestellen, danke.",
        ),
        ("Thank you very much.", "Danke sehr."),  # both sides too short to judge
        ("1234567890 1234567890 12345", "!!!!!!!!!!!!!!!!!!!!!!!!!!!"),  # no language at all: not judged
    ]
    assert language_filter(pairs) == [pairs[0], None, None, pairs[3], pairs[4]]


def test_language_filter_settings_and_codes(language_filter: LanguageFilter) -> None:
    settings = language_filter.settings()
    assert settings["languages"] == ["de", "en", "es", "fr"] and settings["min_chars"] == 20
    assert "en" in LanguageFilter(src_lang="en", tgt_lang="es").codes  # the default list
    with pytest.raises(UserError, match="'xx' is no language lingua knows"):
        LanguageFilter(src_lang="en", tgt_lang="xx")


@pytest.mark.parametrize(
    ("module", "make"),
    [
        ("lingua", lambda: LanguageFilter(src_lang="en", tgt_lang="es")),
        ("sacremoses", lambda: MosesPunctuation(src_lang="en", tgt_lang="es")),
    ],
)
def test_a_missing_library_names_the_extra(module: str, make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(UserError, match=r"pip install 'seq2seq\[clean\]'"):
        make()


def test_every_transform_instantiates_from_a_hydra_entry() -> None:
    entries = OmegaConf.create(
        [
            {"_target_": "seq2seq.data.transforms.MosesPunctuation", "src_lang": "en", "tgt_lang": "es"},
            {"_target_": "seq2seq.data.transforms.UnicodeNormalize", "form": "NFKC"},
            {"_target_": "seq2seq.data.transforms.DropIdentical"},
            {"_target_": "seq2seq.data.transforms.DropRepeats", "max_char_run": 8, "max_word_run": 4},
            {"_target_": "seq2seq.data.transforms.DropLengthRatio", "max_char_ratio": 2.5, "min_chars": 20},
            {"_target_": "seq2seq.data.transforms.Deduplicate"},
            {
                "_target_": "seq2seq.data.transforms.LanguageFilter",
                "src_lang": "en",
                "tgt_lang": "es",
                "languages": ["en", "es", "pt"],
            },
        ]
    )
    transforms = [instantiate(entry) for entry in entries]
    for transform in transforms:
        check_transform(transform)
        json.dumps(transform.settings())
    assert [t.name for t in transforms][:3] == ["MosesPunctuation", "UnicodeNormalize", "DropIdentical"]
    assert transforms[3].settings() == {"max_char_run": 8, "max_word_run": 4}


def test_check_transform_rejects_what_is_not_one() -> None:
    for wrong in (len, DropIdentical, object()):
        with pytest.raises(UserError, match="is not a transform") as error:
            check_transform(wrong)
        assert "\n" not in str(error.value)

    class Unjsonable(Transform):
        name = "Unjsonable"

        def settings(self) -> dict:
            return {"path": object()}

        def __call__(self, pairs):
            return list(pairs)

    with pytest.raises(UserError, match="settings\\(\\) is not JSON"):
        check_transform(Unjsonable())

    class NoCall(Transform):  # what a transform must do is abstract: it cannot be built without it
        def settings(self) -> dict:
            return {}

    with pytest.raises(TypeError, match="abstract method __call__"):
        NoCall()

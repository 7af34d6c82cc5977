"""The Bible recipe's split rule and verse pairing, on synthetic verses (no diatheke needed)."""

import json

import pytest

from seq2seq.data.bible.prepare import align_translations, chapter_number, prepare_bible, split_of
from seq2seq.data.bible.sword import BOOKS, Verse
from seq2seq.errors import UserError


def test_chapters_are_numbered_from_genesis_to_revelation():
    assert sum(chapters for _, _, chapters in BOOKS) == 1189
    assert chapter_number(0, 1) == 0
    assert chapter_number(1, 1) == 50  # Exodus 1 follows Genesis 50
    assert chapter_number(len(BOOKS) - 1, 22) == 1188


def test_split_rule_sends_one_chapter_in_twenty_to_each_of_dev_and_test():
    splits = [split_of(i) for i in range(1189)]
    assert splits[0] == "dev" and splits[10] == "test" and splits[20] == "dev" and splits[11] == "train"
    assert splits.count("test") == 59 and splits.count("dev") == 60 and splits.count("train") == 1070


def _verses(book, chapter, texts):
    return [Verse(book, chapter, k + 1, t) for k, t in enumerate(texts)]


def test_pairs_drops_and_repairs_are_reported():
    english = [
        "Yahweh spoke to Moses, saying, “Send men to spy out the land of Canaan.”",
        "Moses sent them from the wilderness of Paran according to the commandment.",
        "These were their names: of the tribe of Reuben, Shammua the son of Zaccur.",
        "Of the tribe of Simeon, Shaphat the son of Hori.",
    ]
    spanish = [
        "",
        "Y Jehová habló á Moisés, diciendo: Envía tú hombres que reconozcan la tierra.",
        "Y Moisés los envió desde el desierto de Parán conforme á la palabra de Jehová.",
        (
            "Los nombres de los cuales son estos: De la tribu de Rubén, Sammua hijo de Zaccur. "
            "De la tribu de Simeón, Saphat hijo de Hori."
        ),
    ]
    pairs, drops, notes = align_translations(
        _verses(3, 13, english), _verses(3, 13, spanish), names=("en", "es")
    )
    assert [p.refs for p in pairs] == [
        ("Num.13.1", "Num.13.2"),
        ("Num.13.2", "Num.13.3"),
        ("Num.13.3+Num.13.4", "Num.13.4"),
    ]
    assert pairs[2].texts[0] == english[2] + " " + english[3]
    assert [(d.refs, d.reason) for d in drops] == [(("", "Num.13.1"), "empty in es")]
    assert notes["re-paired"] == 2 and notes["merged"] == 1 and notes["re-paired in Num.13"] == 2
    assert {p.chapter for p in pairs} == {chapter_number(3, 13)}


def test_a_corpus_made_with_other_settings_is_rebuilt(tmp_path):
    """(That the same settings are a no-op is checked on the real corpus in test_bible_corpus.py.)"""
    for name in ("train", "dev", "test"):
        for ext in ("en", "es", "ids"):
            (tmp_path / f"{name}.{ext}").write_text("x\n", encoding="utf-8")
    (tmp_path / "stats.json").write_text(json.dumps({"fingerprint": "other settings"}), encoding="utf-8")
    # Rebuilding needs diatheke, which is absent here: the error shows a rebuild was attempted.
    with pytest.raises(UserError, match=r"install them with: sudo apt-get install diatheke pkg-a pkg-b$"):
        prepare_bible(out_dir=tmp_path, modules={"en": "A", "es": "B"}, packages={"A": "pkg-a", "B": "pkg-b"},
                      diatheke=str(tmp_path / "absent"), install_missing=False)  # fmt: skip


def test_recipe_arguments_are_checked():
    with pytest.raises(UserError, match="needs exactly two modules"):
        prepare_bible(out_dir="x", modules={"en": "A"}, packages={})
    with pytest.raises(UserError, match=r"strongs_from may only name the first language \(en\)"):
        prepare_bible(out_dir="x", modules={"en": "A", "es": "B"}, strongs_from={"es": "C"}, packages={})

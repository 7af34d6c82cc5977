"""Glossaries (seq2seq.inference.glossary): the constraints of small fixed sentences follow the matching rules
(word boundaries, smart case, longest leftmost match without overlaps, first-occurrence order without
repeats, whitespace runs, Unicode); `Glossary.load` reads comments, blank lines, a byte order mark and
CRLF endings, and every malformed file is a one-line UserError that names the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.errors import UserError
from seq2seq.inference.glossary import Glossary

BIBLE = Glossary([("Lord God", "Señor Dios"), ("Lord", "Señor"), ("God", "Dios")])


def write(tmp_path: Path, content: str | bytes, name: str = "glossary.tsv") -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


def load_error(path: Path) -> str:
    with pytest.raises(UserError) as error:
        Glossary.load(path)
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Lordship", []),
        ("the Lords", []),
        ("overLord", []),
        ("Lord_", []),
        ("Lord2 2Lord", []),
        ("God's word", ["Dios"]),
        ("(God)", ["Dios"]),
        ("Lord.", ["Señor"]),
        ("«Lord»", ["Señor"]),
        ("Godly Lordship of God", ["Dios"]),
    ],
)
def test_word_boundaries(text: str, expected: list[str]) -> None:
    assert BIBLE.constraints(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("神说：要有光，就有了光。", ["Dios", "luz"]),
        ("神的灵运行在水面上", ["Dios"]),
        ("新しいカメラを買った", ["cámara"]),
        ("ขอบคุณครับ", ["gracias"]),
        ("的Lord说", ["Señor"]),  # next to a letter written without spaces: a boundary
        ("Lordship的神", ["Dios"]),  # between two letters written with spaces: none
    ],
)
def test_scripts_written_without_spaces_have_a_boundary_at_every_letter(
    text: str, expected: list[str]
) -> None:
    glossary = Glossary(
        [("神", "Dios"), ("光", "luz"), ("カメラ", "cámara"), ("ขอบคุณ", "gracias"), ("Lord", "Señor")]
    )
    assert glossary.constraints(text) == expected


def test_lowercase_term_matches_any_case() -> None:
    glossary = Glossary([("lord", "señor")])
    assert glossary.constraints("lord") == ["señor"]
    assert glossary.constraints("Lord") == ["señor"]
    assert glossary.constraints("LORD") == ["señor"]
    assert glossary.constraints("lOrD") == ["señor"]


def test_term_with_uppercase_matches_only_as_written() -> None:
    glossary = Glossary([("LORD", "SEÑOR"), ("Paul", "Pablo")])
    assert glossary.constraints("LORD") == ["SEÑOR"]
    assert glossary.constraints("Lord lord") == []
    assert glossary.constraints("paul PAUL pAul") == []
    assert glossary.constraints("Paul") == ["Pablo"]


def test_exact_case_term_wins_a_tie_with_a_lowercase_term() -> None:
    glossary = Glossary([("lord", "señor"), ("Lord", "Señor")])
    assert glossary.constraints("Lord") == ["Señor"]
    assert glossary.constraints("LORD") == ["señor"]
    assert glossary.constraints("Lord and LORD") == ["Señor", "señor"]


def test_longest_match_wins_and_matches_do_not_overlap() -> None:
    assert BIBLE.constraints("the Lord God said") == ["Señor Dios"]
    assert BIBLE.constraints("the Lord God said to the Lord") == ["Señor Dios", "Señor"]
    assert BIBLE.constraints("God said to the Lord God") == ["Dios", "Señor Dios"]
    assert BIBLE.constraints("the Lord Godly") == ["Señor"]  # "Lord God" stops inside a word


def test_leftmost_match_wins_over_a_longer_later_one() -> None:
    glossary = Glossary([("New York", "Nueva York"), ("York City Hall", "Ayuntamiento de York")])
    assert glossary.constraints("New York City Hall") == ["Nueva York"]


def test_longest_match_across_case_rules() -> None:
    upper_short = Glossary([("LORD", "SEÑOR"), ("lord god", "señor dios")])
    assert upper_short.constraints("LORD GOD") == ["señor dios"]
    assert upper_short.constraints("LORD god LORD") == ["señor dios", "SEÑOR"]
    lower_short = Glossary([("lord", "señor"), ("Lord God", "Señor Dios")])
    assert lower_short.constraints("Lord God and lord god") == ["Señor Dios", "señor"]


def test_order_of_first_occurrence_each_target_once() -> None:
    glossary = Glossary([("Saul", "Pablo"), ("Paul", "Pablo"), ("Peter", "Pedro"), ("John", "Juan")])
    text = "Peter and Paul met Saul; then Peter left"
    assert glossary.constraints(text) == ["Pedro", "Pablo"]
    assert glossary.constraints("John, Peter, John") == ["Juan", "Pedro"]
    assert glossary.constraints("nobody here") == []
    assert glossary.constraints("") == []


def test_whitespace_in_a_term_matches_any_run() -> None:
    glossary = Glossary([("Holy   Spirit", "Espíritu  Santo")])
    assert glossary.entries == (("Holy Spirit", "Espíritu Santo"),)
    for text in ("Holy Spirit", "Holy  Spirit", "Holy\tSpirit", "Holy\n Spirit", "Holy\u00a0Spirit"):
        assert glossary.constraints(text) == ["Espíritu Santo"], repr(text)
    assert glossary.constraints("HolySpirit") == []
    assert glossary.constraints("Holy-Spirit") == []


def test_unicode_terms() -> None:
    glossary = Glossary([("Jehová", "Jehovah"), ("espíritu", "spirit"), ("Dios", "God"), ("θεός", "god")])
    assert glossary.constraints("Jehová habló") == ["Jehovah"]
    assert glossary.constraints("Jehova\u0301 habló") == ["Jehovah"]  # decomposed accent, compared as NFC
    assert glossary.constraints("Jehova JEHOVÁ") == []
    assert glossary.constraints("el ESPÍRITU de Dios") == ["spirit", "God"]
    assert glossary.constraints("Diosé Diosa") == []  # accented letters are word characters
    assert glossary.constraints("ὁ ΘΕΌΣ") == ["god"]
    decomposed = Glossary([("Jehova\u0301", "Jehovah")])
    assert decomposed.constraints("Jehová") == ["Jehovah"]


def test_regex_characters_in_terms_are_literal() -> None:
    glossary = Glossary([("a.b", "x"), ("(c)", "y")])
    assert glossary.constraints("axb c") == []
    assert glossary.constraints("a.b and (c)") == ["x", "y"]


def test_many_terms() -> None:
    glossary = Glossary([(f"term{number}", f"T{number}") for number in range(2000)])
    assert len(glossary) == 2000
    text = "term17 term1999 term5 term17x term20000 TERM3"
    assert glossary.constraints(text) == ["T17", "T1999", "T5", "T3"]


def test_constructor_normalises_and_dedupes() -> None:
    glossary = Glossary([("  Lord   God ", " Señor  Dios "), ("Lord God", "Señor Dios"), ("God", "Dios")])
    assert glossary.entries == (("Lord God", "Señor Dios"), ("God", "Dios"))
    assert Glossary([]).constraints("Lord God") == []


def test_constructor_errors() -> None:
    with pytest.raises(UserError, match=r'^glossary entry 3: source term "Lord" has target "Dios" here but '):
        Glossary([("Lord", "Señor"), ("God", "Dios"), ("Lord", "Dios")])
    with pytest.raises(UserError, match=r"^glossary entry 1: the target term is empty"):
        Glossary([("Lord", "  ")])


def test_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "\ufeff# Bible names\r\n"
        "Lord God\tSeñor Dios\r\n"
        "\r\n"
        "  # indented comment\n"
        " Lord \t Señor \n"
        "Lord God\tSeñor Dios\n"
        "   \t  \n"
        "jehová\tJehová\n",
    )
    glossary = Glossary.load(path)
    assert glossary.entries == (("Lord God", "Señor Dios"), ("Lord", "Señor"), ("jehová", "Jehová"))
    assert glossary.constraints("JEHOVÁ, the Lord God, Lord of all") == ["Jehová", "Señor Dios", "Señor"]
    assert Glossary.load(str(path)).entries == glossary.entries


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (
            "# names\nLord\tSeñor\nGod Dios\n",
            r'glossary\.tsv line 3: expected "source term<TAB>target term", found 1 field; separate .* tab',
        ),
        ("Lord\tSeñor\tSeñor\n", r"glossary\.tsv line 1: expected .*, found 3 fields; put exactly one tab"),
        ("Lord\tSeñor\t\n", r"glossary\.tsv line 1: expected .*, found 3 fields"),
        ("Lord\tSeñor\n\n\tDios\n", r"glossary\.tsv line 3: the source term is empty; write "),
        ("Lord\t  \n", r"glossary\.tsv line 1: the target term is empty; write "),
        (
            "Lord\tSeñor\nGod\tDios\n# note\n\nLord\tDios\n",
            r'\.tsv line 5: source term "Lord" has target "Dios" here but "Señor" on line 1; keep one',
        ),
        ("# only comments\n\n   \n", r"glossary .*glossary\.tsv has no entries; add lines "),
        ("", r"glossary .*glossary\.tsv has no entries"),
        (
            b"Lord\tSe\xc3\xb1or\nGod\tDi\xf3s\n",
            r"glossary\.tsv line 2: not valid UTF-8; save the glossary as UTF-8",
        ),
    ],
)
def test_load_errors(tmp_path: Path, content: str | bytes, pattern: str) -> None:
    message = load_error(write(tmp_path, content))
    assert str(tmp_path) in message
    with pytest.raises(UserError, match=pattern):
        Glossary.load(tmp_path / "glossary.tsv")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path / "absent.tsv").endswith("absent.tsv does not exist; check the path")
    with pytest.raises(UserError, match=r"^glossary .*absent\.tsv does not exist"):
        Glossary.load(tmp_path / "absent.tsv")
    with pytest.raises(UserError, match=r"^glossary .* is a directory; give the path of a "):
        Glossary.load(tmp_path)
    assert "\n" not in load_error(tmp_path)

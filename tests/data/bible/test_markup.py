"""Markup stripping and the RV1909's printing conventions, on verses copied from the modules."""

import pytest

from seq2seq.data.bible.markup import (
    clean_markup,
    restore_chapter_case,
    strip_leading_caps_word,
    strip_subscription,
)

# (what the case shows, a verse's raw markup, its text)
CLEAN_MARKUP = [
    (
        "a footnote between words leaves a space",
        '<w savlm="strong:H0430">God</w><note placement="foot" swordFootnote="1"></note>'
        '<w savlm="strong:H1254">created</w> <w savlm="strong:H0853">the</w> heavens.',
        "God created the heavens.",
    ),
    (
        "a footnote before punctuation leaves no space",
        '<w savlm="strong:H0430">God’s</w><note placement="foot" swordFootnote="2">a note</note>.',
        "God’s.",
    ),
    (
        "added words are separate words unless an enclitic pronoun",
        '<w savlm="strong:H1961">Y FUÉ</w><transChange type="added">que</transChange>'
        '<w savlm="strong:H7970">á los treinta</w> <w savlm="strong:H8141">años</w>, '
        '<w>oyéndo</w><transChange type="added">lo</transChange> él',
        "Y FUÉ que á los treinta años, oyéndolo él",
    ),
    (
        "Strong's numbers and line markup never become text",
        '<w lemma="H3967" savlm="strong:H8083 H3967">ochocientos</w> años:'
        '<l eID="gen7861" level="1"/> <l level="2" sID="gen7862"/>muchos',
        "ochocientos años: muchos",
    ),
    (
        "a closing quote tag separates the next sentence",
        'said to him, <q marker="">“Allow it now.”</q>Then he allowed him. <div eID="g1" type="x-p"/>',
        "said to him, “Allow it now.” Then he allowed him.",
    ),
    (
        "speaker labels are dropped",
        'Let’s hurry.<l eID="1" level="2"/> <lg eID="2"/> <speaker>Friends</speaker> <lg sID="3"/>We will',
        "Let’s hurry. We will",
    ),
    (
        "text after the end of the book is cut",
        'with all the saints. Amen.  <chapter eID="Rev.22"/><div eID="gen1" type="x-p"/> '
        '<div sID="gen2" type="glossary"/> The following words used in the World English Bible',
        "with all the saints. Amen.",
    ),
]


@pytest.mark.parametrize(
    ("raw", "text"), [case[1:] for case in CLEAN_MARKUP], ids=[c[0] for c in CLEAN_MARKUP]
)
def test_clean_markup(raw: str, text: str) -> None:
    assert clean_markup(raw) == text


def test_chapter_capitals_become_normal_case():
    texts = [
        "EN el principio crió Dios.",
        "Y la tierra.",
        "Y FUÉ la tarde.",
        "y fué así.",
        "Salmo de David. ¡OH Jehová, cuánto!",
        "Y EZECHÎAS reinó.",
        "El rey Ezechîas vino.",
    ]
    first = [True, False, True, False, True, True, False]
    fixed = restore_chapter_case(texts, first)
    assert fixed == [
        "En el principio crió Dios.",
        "Y la tierra.",
        "Y fué la tarde.",
        "y fué así.",
        "Salmo de David. ¡Oh Jehová, cuánto!",
        "Y Ezechîas reinó.",
        "El rey Ezechîas vino.",
    ]


def test_chapter_case_is_left_alone_in_a_module_without_the_convention():
    texts = ["And the LORD spake unto Moses.", "Then the LORD said.", "In the beginning GOD."]
    assert restore_chapter_case(texts, [True, False, True]) == texts


def test_acrostic_letter_is_stripped_only_when_followed_by_text():
    assert strip_leading_caps_word("ALEPH. Bienaventurados los perfectos") == "Bienaventurados los perfectos"
    assert strip_leading_caps_word("BETH ¿Con qué limpiará?") == "¿Con qué limpiará?"
    assert strip_leading_caps_word("HE.") == "HE."
    assert strip_leading_caps_word("Blessed are those") == "Blessed are those"


def test_letter_subscription_is_removed():
    text = "La gracia sea con todos vosotros. Amén. Fué escrita á los Hebreos desde Italia con Timoteo."
    assert strip_subscription(text) == "La gracia sea con todos vosotros. Amén."
    assert strip_subscription("Grace be with you all. Amen.") == "Grace be with you all. Amen."

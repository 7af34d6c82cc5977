"""Markup stripping and the RV1909's printing conventions, on verses copied from the modules."""

from seq2seq.data.bible.markup import (
    clean_markup,
    restore_chapter_case,
    strip_leading_caps_word,
    strip_subscription,
)


def test_footnote_between_words_leaves_a_space():
    raw = (
        '<w savlm="strong:H0430">God</w><note placement="foot" swordFootnote="1"></note>'
        '<w savlm="strong:H1254">created</w> <w savlm="strong:H0853">the</w> heavens.'
    )
    assert clean_markup(raw) == "God created the heavens."


def test_footnote_before_punctuation_leaves_no_space():
    raw = '<w savlm="strong:H0430">God’s</w><note placement="foot" swordFootnote="2">a note</note>.'
    assert clean_markup(raw) == "God’s."


def test_added_words_are_separate_words_unless_an_enclitic_pronoun():
    raw = (
        '<w savlm="strong:H1961">Y FUÉ</w><transChange type="added">que</transChange>'
        '<w savlm="strong:H7970">á los treinta</w> <w savlm="strong:H8141">años</w>, '
        '<w>oyéndo</w><transChange type="added">lo</transChange> él'
    )
    assert clean_markup(raw) == "Y FUÉ que á los treinta años, oyéndolo él"


def test_strongs_numbers_and_line_markup_never_become_text():
    raw = (
        '<w lemma="H3967" savlm="strong:H8083 H3967">ochocientos</w> años:'
        '<l eID="gen7861" level="1"/> <l level="2" sID="gen7862"/>muchos'
    )
    assert clean_markup(raw) == "ochocientos años: muchos"


def test_closing_quote_tag_separates_the_next_sentence():
    raw = 'said to him, <q marker="">“Allow it now.”</q>Then he allowed him. <div eID="g1" type="x-p"/>'
    assert clean_markup(raw) == "said to him, “Allow it now.” Then he allowed him."


def test_speaker_labels_are_dropped():
    raw = 'Let’s hurry.<l eID="1" level="2"/> <lg eID="2"/> <speaker>Friends</speaker> <lg sID="3"/>We will'
    assert clean_markup(raw) == "Let’s hurry. We will"


def test_text_after_the_end_of_the_book_is_cut():
    raw = (
        'with all the saints. Amen.  <chapter eID="Rev.22"/><div eID="gen1" type="x-p"/> '
        '<div sID="gen2" type="glossary"/> The following words used in the World English Bible'
    )
    assert clean_markup(raw) == "with all the saints. Amen."


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

"""Inline markup and placeholders: what is taken out of a line (seq2seq.inference.markup) and how it is put
back into a translation by hand-made word alignments (seq2seq.inference.tag_projection). Units here are
words and punctuation marks, as a tokenizer's pieces would be."""

from __future__ import annotations

import random
import re
import xml.dom.minidom

import pytest

from seq2seq.errors import UserError
from seq2seq.inference.markup import markup_pattern, parse_markup
from seq2seq.inference.tag_projection import restore_markup

PATTERN = markup_pattern()


def units(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]


def projected(line: str, translation: str, alignment: list[tuple[int, int]]) -> str:
    marked = parse_markup(line, PATTERN)
    return restore_markup(marked, units(marked.plain), translation, units(translation), alignment)


def well_formed(text: str) -> bool:
    try:
        xml.dom.minidom.parseString(f"<root>{text}</root>")
    except Exception:  # any parse error means: not well-formed
        return False
    return True


DIAGONAL = [(i, i) for i in range(40)]


@pytest.mark.parametrize(
    ("line", "plain", "kinds"),
    [
        ("Hello <b>world</b>!", "Hello world!", ["open", "close"]),
        ("a <br> b <br/> c", "a b c", ["point", "point"]),
        ("<!-- note --> a <![CDATA[x<y]]> b", "a b", ["point", "point"]),
        ("<a href=\"x>y\" title='<b>'>go</a>", "go", ["open", "close"]),
        ("fish &amp; chips &#233; &#xE9;", "fish & chips é é", []),
        ("Send {0} to ${user} at %1$s or %(name)s: %.2f%%", "Send to at or :", ["point"] * 6),
        ("see https://x.org/a?b=1. or me+x@mail.example.com", "see . or", ["point", "point"]),
        ("Genesis 1:1 has 31,102 verses", "Genesis has verses", ["point", "point"]),
    ],
)
def test_what_is_taken_out(line, plain, kinds):
    marked = parse_markup(line, PATTERN)
    assert marked.plain == plain
    assert [e.kind for e in marked.elements] == kinds


def test_unmatched_tags_are_points_and_pairs_nest():
    marked = parse_markup("<b>a <i>b</b> c</i> <u>d</u>", PATTERN)
    kinds = {e.text: e.kind for e in marked.elements}
    assert kinds == {
        "<b>": "open", "<i>": "point", "</b>": "close", "</i>": "point", "<u>": "open", "</u>": "close"
    }  # fmt: skip
    assert [(marked.elements[a].text, marked.elements[b].text) for a, b in marked.pairs] == [
        ("<b>", "</b>"), ("<u>", "</u>")]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "translation", "alignment", "expected"),
    [
        # a pair surrounds the translation of the words it surrounded, wherever it moved
        ("the <b>red</b> car", "el coche rojo", [(0, 0), (1, 2), (2, 1)], "el coche <b>rojo</b>"),
        # nested tags, the inner one on a word that moved out of the middle
        (
            "<p>the <b>big <i>red</i> car</b></p>",
            "el gran coche rojo",
            [(0, 0), (1, 1), (2, 3), (3, 2)],
            "<p>el <b>gran coche <i>rojo</i></b></p>",
        ),
        # adjacent tags that swap places follow their words
        ("<b>red</b> <i>car</i>", "coche rojo", [(0, 1), (1, 0)], "<i>coche</i> <b>rojo</b>"),
        # a tag around a word the model copies untranslated
        (
            "in <b>Jerusalem</b> today",
            "hoy en Jerusalem",
            [(0, 1), (1, 2), (2, 0)],
            "hoy en <b>Jerusalem</b>",
        ),
        # a tag around a word aligned to nothing: empty, where the words before it went
        ("he <b>then</b> came", "vino", [(0, 0), (2, 0)], "vino <b></b>"),
        # self-closing tags and comments keep their place between words; <br> ends a word, a comment not
        ("one<br/>two <!-- c --> three", "uno dos tres", DIAGONAL, "uno<br/> dos <!-- c --> tres"),
        ("un<!-- c -->able", "incapaz", [(0, 0)], "<!-- c -->incapaz"),  # inside a word: before it
        # entities: the model reads the characters; the translation is escaped again
        ("salt &amp; <b>pepper</b>", "sal & pimienta", DIAGONAL, "sal &amp; <b>pimienta</b>"),
        ("<b>a</b> < b", "a < b", DIAGONAL, "<b>a</b> &lt; b"),
        # placeholders come back byte for byte, glued where they were glued
        (
            "Hello {name}, you have %d new messages",
            "Hola, tiene mensajes nuevos",
            [(0, 0), (1, 1), (2, 2), (3, 2), (4, 4), (5, 3)],
            "Hola {name}, tiene %d mensajes nuevos",
        ),
        ("file{0}.txt", "archivo.txt", [(0, 0), (1, 1), (2, 2)], "archivo{0}.txt"),
    ],
)
def test_projection_rules(line, translation, alignment, expected):
    assert projected(line, translation, alignment) == expected


def test_text_without_markup_is_untouched():
    assert projected("a < b & c", "a < b & c", DIAGONAL) == "a < b & c"


HOSTILE = [
    "<b>never closed and <i>neither",
    "stray </b> end </i> tags",
    "<a title=\"<b>not a tag</b>\" href='x'>attribute</a> text",
    "<![CDATA[ <b> inside ]]> and <!-- <i> --> after",
    "<b>" * 300 + "deep" + "</b>" * 300,
    " ".join(f"<t{i}>w{i}</t{i}>" for i in range(500)),  # 1,000 tags on one line
    "<b>bold <i>both</b> italic</i> {0} %s ${x} 42 https://a.b/c x@y.zz",
]


@pytest.mark.parametrize("line", HOSTILE)
def test_every_element_comes_back_once_and_well_formed_stays_so(line):
    marked = parse_markup(line, PATTERN)
    words = marked.plain.split()
    rng = random.Random(len(line))
    translation = " ".join(reversed(words)) or "x"
    n_source, n_target = len(units(marked.plain)), len(units(translation))
    alignment = [(rng.randrange(max(n_source, 1)), t) for t in range(n_target)]
    out = restore_markup(marked, units(marked.plain), translation, units(translation), alignment)
    for element in marked.elements:
        assert out.count(element.text) >= 1
    assert sorted(e.text for e in marked.elements) == sorted(
        m.group() for m in PATTERN.finditer(out) if m.lastgroup != "entity")  # fmt: skip
    if well_formed(line):
        assert well_formed(out), out


def test_well_formed_random_trees_stay_well_formed_under_random_alignments():
    rng = random.Random(7)
    for _ in range(200):
        line = _random_markup(rng, depth=3)
        assert well_formed(line)
        marked = parse_markup(line, PATTERN)
        translation = " ".join(rng.sample(marked.plain.split(), len(marked.plain.split())))
        n_source, n_target = len(units(marked.plain)), len(units(translation))
        alignment = [(rng.randrange(n_source), t) for t in range(n_target) if rng.random() < 0.8]
        out = restore_markup(marked, units(marked.plain), translation, units(translation), alignment)
        assert well_formed(out), (line, out)
        assert re.sub(r"<!--.*?-->|<[^>]*>|\{0\}|%s", " ", out).split() == translation.split()


def _random_markup(rng: random.Random, depth: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if depth and choice < 0.4:
            name = rng.choice("abiu")
            parts.append(f"<{name}>{_random_markup(rng, depth - 1)}</{name}>")
        elif choice < 0.5:
            parts.append(rng.choice(["<br/>", "{0}", "%s", "<!-- c -->"]))
        else:
            parts.append(f"w{rng.randint(0, 99)}x")
    return " ".join(parts)


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        (["("], "placeholder pattern '(' is no regular expression"),
        (["x*"], "placeholder pattern 'x*' matches empty text"),
    ],
)
def test_bad_placeholder_patterns_are_one_line_errors(patterns, message):
    with pytest.raises(UserError, match=re.escape(message)):
        markup_pattern(patterns)


def test_placeholders_can_be_switched_off_or_replaced():
    assert parse_markup("{0} and 42", markup_pattern([])).plain == "{0} and 42"
    assert parse_markup("[[x]] and 42", markup_pattern([r"\[\[\w+\]\]"])).plain == "and 42"

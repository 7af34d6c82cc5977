"""format=xliff (seq2seq.inference.document_formats.xliff_files): the file opens in translate-toolkit and an
XML parser, equals the input (canonical XML, comments included) once the new targets are taken out, its
inline codes come back byte for byte, and nothing under translate="no" is touched."""

from __future__ import annotations

import html

import pytest
from hostile_documents import XLIFF_1, XLIFF_2, canonical, new_targets, without_new_targets
from lxml import etree
from tiny_translator import tiny_translator_fixtures
from translate.storage import xliff, xliff2

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.document_formats import translate_document, translate_document_text

OPTIONS = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=8)
checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=1, sharpness=4.0)


class Recorder:
    def __init__(self, translator) -> None:
        self.translator, self.seen = translator, []

    def __call__(self, texts, markup):
        self.seen += list(texts)
        return [t.text for t in self.translator.translate(list(texts), markup=markup)]


def translated(document: str, translator) -> tuple[bytes, list[str]]:
    recorder = Recorder(translator)
    return translate_document(document.encode(), "xliff", recorder), recorder.seen


@pytest.mark.parametrize("document", [XLIFF_1, XLIFF_2], ids=["1.2", "2.0"])
def test_only_the_new_targets_differ_and_translate_toolkit_reads_them(translator, document):
    out, _ = translated(document, translator)
    assert without_new_targets(out, document.encode()) == canonical(document.encode())
    store = (xliff.xlifffile if document is XLIFF_1 else xliff2.Xliff2File).parsestring(out)
    before = (xliff.xlifffile if document is XLIFF_1 else xliff2.Xliff2File).parsestring(document.encode())
    added = new_targets(out, document.encode())
    assert sum(1 for u in store.unit_iter() if u.target) == sum(
        1 for u in before.unit_iter() if u.target
    ) + len(added)
    assert set(added) == ({"1", "2", "5", "6", "8", "9"} if document is XLIFF_1 else {"u3", "u4", "u5", "u6"})


def test_native_codes_come_back_byte_for_byte_and_the_model_never_reads_them(translator):
    out, seen = translated(XLIFF_1, translator)
    target = new_targets(out, XLIFF_1.encode())["1"]
    written = etree.tostring(target, encoding="unicode")
    for code in ('<ph id="1">&lt;br/&gt;</ph>', '<bpt id="2">&lt;a href="x.html"&gt;</bpt>',
                 '<ept id="2">&lt;/a&gt;</ept>', '<it id="3" pos="open">&lt;i&gt;</it>'):  # fmt: skip
        assert code in written, (code, written)
    first = next(segment for segment in seen if "the water" in segment and "light" in segment)
    assert not any(word in first for word in ("br/", "href", "&lt;"))
    protected = new_targets(out, XLIFF_1.encode())["8"]
    assert '<mrk mtype="protected">Light</mrk>' in etree.tostring(protected, encoding="unicode")


def test_a_span_of_native_codes_is_placed_as_a_pair(translator):
    _, seen = translated(XLIFF_1, translator)
    first = next(s for s in seen if s.startswith("the light") and "water" in s and "\n" not in s)
    # <bpt>/<ept> around "the water" reach the model as one pair of tags, <ph> and <it> as points
    assert first == ("the light <seq2seq-kept-0/> and <seq2seq-kept-1>the water</seq2seq-kept-1> "
                     "<seq2seq-kept-3/>night")  # fmt: skip
    assert any(s.startswith("in the <seq2seq-kept-") and "</seq2seq-kept-" in s for s in seen)  # <bx>/<ex>


def test_version_2_codes_and_protected_spans(translator):
    out, seen = translated(XLIFF_2, translator)
    target = new_targets(out, XLIFF_2.encode())["u4"]
    written = etree.tostring(target, encoding="unicode")
    for code in (
        '<mrk id="m1" translate="no">Light</mrk>',
        '<sc id="1"/>',
        '<ec startRef="1"/>',
        '<ph id="3"/>',
    ):
        assert code in written
    assert not any("Light" in segment for segment in seen)
    assert etree.QName(target.find("{*}pc")).localname == "pc"


@pytest.mark.parametrize("document", [XLIFF_1, XLIFF_2], ids=["1.2", "2.0"])
def test_translate_no_on_a_group_covers_every_unit_below_it(translator, document):
    out, seen = translated(document, translator)
    assert not any(s in seen for s in ("The Light Co", "the beginning"))
    units = etree.fromstring(out).findall(".//{*}group[@translate='no']//{*}source/..")
    untouched = [u for u in units if u.find("{*}target") is None]
    assert len(untouched) == 2  # 2.0: the unit that says translate="yes" gets its target
    if document is XLIFF_2:
        assert "the day" in seen


@pytest.mark.parametrize("document", [XLIFF_1, XLIFF_2], ids=["1.2", "2.0"])
def test_preserved_space_keeps_the_edges_and_the_lines(translator, document):
    out, _ = translated(document, translator)
    targets = new_targets(out, document.encode())
    target = targets["5" if document is XLIFF_1 else "u5"]
    text = "".join(target.itertext())
    lines = text.split("\n")
    first = translator.translate(["the light"], markup="true")[0].text
    second = translator.translate(["and the water"], markup="true")[0].text
    assert lines == [f"  {html.unescape(first)}", f"{html.unescape(second)}  "]
    if document is XLIFF_2:  # the source said xml:space itself: so does its target
        assert target.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"


def test_cdata_is_read_as_text(translator):
    _, seen = translated(XLIFF_1, translator)
    assert "water &amp; &lt;land&gt;" in seen


def test_an_encoding_that_cannot_hold_a_translation_gets_character_references():
    document = XLIFF_1.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').replace("the day", "the café")
    data = document.encode("latin-1")
    out = translate_document(data, "xliff", lambda texts, markup: [t + " €" for t in texts])
    assert out.startswith(b'<?xml version="1.0" encoding="ISO-8859-1"?>')
    assert b"&#8364;" in out and "café".encode("latin-1") in out
    targets = new_targets(out, data)
    assert "".join(targets["2"].itertext()).endswith(" €")


def test_the_server_text_path_honours_the_declared_encoding():
    document = XLIFF_1.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').replace(
        "god saw the", "god saw the café"
    )
    out = translate_document_text(document, "xliff", lambda texts, markup: [t + " ñ" for t in texts])
    assert isinstance(out, str) and 'encoding="ISO-8859-1"' in out and "the café" in out
    store = xliff.xlifffile.parsestring(out.encode("latin-1"))
    assert any(u.target.endswith(" ñ") for u in store.unit_iter() if u.target)
    with pytest.raises(UserError, match="which its declared encoding ISO-8859-1 cannot hold; declare UTF-8"):
        translate_document_text(document.replace("café", "caf€"), "xliff", lambda texts, markup: texts)


def test_the_file_keeps_its_own_layout_and_an_empty_target_is_filled_in_place():
    """Not re-indented (a CAT tool's one-line file stays one line), what stands around the root kept; a
    unit's empty <target state="new"/> gets the translation with its attributes; a 1.2 target follows
    <seg-source>."""
    head = '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n<!-- top -->\n'
    units = ('<trans-unit id="1"><source>the light</source><target state="new"/></trans-unit>'
             '<trans-unit id="2"><source>the water</source>\n  <seg-source><mrk mtype="seg" mid="1">the water'
             "</mrk></seg-source>\n  <note>n</note></trans-unit>")  # fmt: skip
    file = '<file original="a" source-language="en" target-language="es" datatype="plaintext">'
    document = (f'{head}<xliff xmlns="urn:oasis:names:tc:xliff:document:1.2" version="1.2">{file}<body>'
                f"{units}</body></file></xliff>\n<!-- end -->\n")  # fmt: skip
    out = translate_document(document.encode(), "xliff", lambda texts, markup: [t.upper() for t in texts])
    expected = document.replace('<target state="new"/>', '<target state="new">THE LIGHT</target>').replace(
        "</seg-source>\n  <note>", "</seg-source>\n  <target>THE WATER</target>\n  <note>"
    )
    assert out == expected.encode()

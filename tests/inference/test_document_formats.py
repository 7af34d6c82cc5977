"""Whole files (seq2seq.inference.document_formats, seq2seq-translate format=): each segment's translation
is the Translator's translation of that segment; the file opens in the library that reads such files
(lxml for HTML, polib for PO, translate-toolkit and lxml for XLIFF); what was not to be translated is
untouched, and taking the new targets out gives back the input."""

from __future__ import annotations

import lxml.html
import polib
import pytest
from in_process import run_translate
from lxml import etree
from tiny_translator import tiny_translator_fixtures

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.document_formats import translate_document

OPTIONS = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=8)

PAGE = """<!DOCTYPE html>
<html><head><title>the beginning</title><style>p { color: red }</style></head>
<body><h1>in the <b>beginning</b></h1>
<p>god created <a href="/gen/1">heaven</a> &amp; earth</p>
<ul><li>the light was good</li><li>night and <i>water</i></li></ul>
<pre>keep this</pre><script>var x = "not text";</script></body></html>"""

XLIFF_1 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
 <file original="a.txt" source-language="en" target-language="es" datatype="plaintext">
  <body>
   <trans-unit id="1"><source>god saw the <g id="1">light</g> was good <x id="2"/>.</source>
    <note>a note</note></trans-unit>
   <trans-unit id="2" translate="no"><source>BrandName</source></trans-unit>
   <trans-unit id="3"><source>water and land</source><target>ya hecho</target></trans-unit>
  </body>
 </file>
</xliff>
"""

XLIFF_2 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="es">
 <file id="f1">
  <unit id="u1">
   <notes><note>a note</note></notes>
   <segment><source>the night was <pc id="1">good</pc> <ph id="2"/>.</source></segment>
  </unit>
 </file>
</xliff>
"""

PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

#. a note
#: app.c:12
msgid "the night was <b>good</b>"
msgstr ""

msgid "%d day"
msgid_plural "%d days"
msgstr[0] ""
msgstr[1] ""

msgid "water and land"
msgstr "ya hecho"

#~ msgid "old"
#~ msgstr "viejo"
"""


checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=1, sharpness=4.0)


def segments(translator: Translator):
    return lambda texts, markup: [t.text for t in translator.translate(list(texts), markup=markup)]


def test_html_blocks_are_translated_and_the_rest_kept(translator):
    out = translate_document(PAGE.encode(), "html", segments(translator)).decode()
    page, source = lxml.html.document_fromstring(out), lxml.html.document_fromstring(PAGE)
    assert out.startswith("<!DOCTYPE html>")
    assert [e.tag for e in page.iter()] == [e.tag for e in source.iter()]  # inline tags come back too
    for tag in ("pre", "script", "style"):
        assert page.find(f".//{tag}").text == source.find(f".//{tag}").text
    assert page.find(".//a").get("href") == "/gen/1"
    expected = translator.translate(["in the <b>beginning</b>"], markup="true")[0].text
    assert (
        lxml.html.tostring(page.find(".//h1"), encoding="unicode", with_tail=False) == f"<h1>{expected}</h1>"
    )
    assert page.find(".//title").text == translator.translate(["the beginning"], markup="true")[0].text


@pytest.mark.parametrize("document", [XLIFF_1, XLIFF_2])
def test_xliff_units_get_targets_and_nothing_else_changes(translator, document):
    out = translate_document(document.encode(), "xliff", segments(translator))
    tree, source = etree.fromstring(out), etree.fromstring(document.encode())
    namespace = {"x": tree.nsmap[None]}
    targets = tree.findall(".//x:target", namespace)
    new = [t for t in targets if t.text != "ya hecho"]
    assert len(new) == 1 and len(targets) == len(source.findall(".//x:target", namespace)) + 1
    codes = [("g", "1"), ("x", "2")] if document is XLIFF_1 else [("pc", "1"), ("ph", "2")]
    assert [(etree.QName(e).localname, e.get("id")) for e in new[0].iter() if e is not new[0]] == codes
    new[0].getparent().remove(new[0])
    assert etree.tostring(tree, method="c14n") == etree.tostring(source, method="c14n")


def test_po_messages_get_translations_and_the_file_opens_in_polib(translator):
    out = translate_document(PO.encode(), "po", segments(translator)).decode()
    catalog, source = polib.pofile(out), polib.pofile(PO)
    assert [e.msgid for e in catalog] == [e.msgid for e in source]
    first, plural, done = catalog[0], catalog[1], catalog[2]
    assert first.msgstr == translator.translate(["the night was <b>good</b>"])[0].text
    assert "<b>" in first.msgstr and first.comment == "a note" and first.occurrences == [("app.c", "12")]
    assert plural.msgstr_plural[0] == translator.translate(["%d day"])[0].text
    assert plural.msgstr_plural[1] == translator.translate(["%d days"])[0].text
    assert done.msgstr == "ya hecho" and catalog.obsolete_entries()[0].msgstr == "viejo"
    emptied = polib.pofile(out)
    for entry in emptied[:2]:
        entry.msgstr, entry.msgstr_plural = "", {k: "" for k in entry.msgstr_plural}
    assert str(emptied) == str(source)


@pytest.mark.parametrize(
    ("data", "fmt", "message"),
    [
        (b"<p>\xff</p>", "html", "the html file is not valid UTF-8 (byte 3); convert it to UTF-8"),
        (b"<xliff version='1.2'><file>", "xliff", "the xliff file cannot be parsed"),
        (b"x", "docx", "format='docx' is not supported; choose text, html, xliff, po"),
    ],
)
def test_bad_files_are_one_line_errors(translator, data, fmt, message):
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        translate_document(data, fmt, segments(translator))


def test_the_cli_translates_a_file_in_its_format(checkpoint, translator, tmp_path):
    source, output = tmp_path / "page.html", tmp_path / "page.es.html"
    source.write_text(PAGE, encoding="utf-8")
    settings = [f"checkpoint={checkpoint}", "decode=greedy", "decode.max_len_a=0", "decode.max_len_b=8",
                "format=html", f"input={source}", f"output={output}"]  # fmt: skip
    code, stderr = run_translate(*settings)
    assert code == 0, stderr[-2000:]
    assert output.read_bytes() == translate_document(PAGE.encode(), "html", segments(translator))
    code, stderr = run_translate(*settings, "scores=true")
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert code == 2 and errors == ["error: format=html writes the translated file; scores need format=text"]


def test_the_server_translates_files_in_their_format(checkpoint, translator):
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.metrics import Metrics
    from seq2seq.serve.requests import Limits

    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    expected = [translate_document(f.encode(), fmt, segments(translator)).decode() for f, fmt in
                [(PAGE, "html"), (PO, "po")]]  # fmt: skip
    with TestClient(app) as client:
        for (document, fmt), want in zip([(PAGE, "html"), (PO, "po")], expected):
            answer = client.post("/translate", json={"texts": [document], "format": fmt, "beam_size": 1})
            assert answer.status_code == 200 and answer.json()["translations"] == [want], answer.text
        answer = client.post("/translate", json={"texts": [PAGE], "format": "docx"})
        assert answer.status_code == 422
        assert answer.json()["error"] == '"format" must be one of "text", "html", "xliff", "po", got "docx"'
        answer = client.post("/translate", json={"texts": [PAGE], "format": "html", "confidence": True})
        assert answer.status_code == 422 and 'need "format": "text"' in answer.json()["error"]
        answer = client.post("/translate", json={"texts": ["<xliff version='1.2'><file>"], "format": "xliff"})
        assert answer.status_code == 422 and answer.json()["error"].startswith(
            "the xliff file cannot be parsed"
        )

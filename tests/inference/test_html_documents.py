"""format=html (seq2seq.inference.document_formats.html_pages): the page comes back as HTML a browser reads
as the same page (html5lib, the HTML5 parsing algorithm, and lxml.html agree on its elements and
attributes), with each segment replaced by the Translator's translation of that segment and everything
that is not text to translate (code, scripts, translate="no") untouched."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from hostile_documents import FRAGMENT, PAGE, html5_structure, html5_texts, lxml_structure
from tiny_translator import tiny_translator_fixtures

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.document_formats import translate_document, translate_document_text

OPTIONS = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=8)
checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=1, sharpness=4.0)


class Recorder:
    """The Translate callable over a Translator, remembering every segment it was given."""

    def __init__(self, translator: Translator) -> None:
        self.translator, self.seen = translator, []

    def __call__(self, texts, markup):
        self.seen += list(texts)
        return [t.text for t in self.translator.translate(list(texts), markup=markup)]


def translated(page: str, translator: Translator) -> tuple[str, list[str]]:
    recorder = Recorder(translator)
    return translate_document(page.encode(), "html", recorder).decode(), recorder.seen


@pytest.mark.parametrize("page", [PAGE, FRAGMENT], ids=["page", "fragment"])
def test_the_page_is_the_same_page_to_a_browser_and_to_lxml(translator, page):
    out, _ = translated(page, translator)
    assert html5_structure(out) == html5_structure(page)
    assert lxml_structure(out) == lxml_structure(page)
    for tag in ("script", "style", "pre", "code", "kbd", "samp", "textarea"):
        assert html5_texts(out, tag) == html5_texts(page, tag), tag


def test_elements_keep_their_end_tags_and_void_ones_stay_void(translator):
    out, seen = translated(PAGE, translator)
    assert '<script src="a.js"></script>' in out and '<div class="x"></div>' in out
    assert "<br>" in out and '<img src="i.png" alt="x">' in out and '<meta charset="utf-8">' in out
    assert not re.search(r"<(?!br|img|meta)\w+[^>]*/>", out), "an element serialized as XML"
    assert any('<span class="icon"></span>' in segment for segment in seen)
    assert not any("/>" in re.sub(r"<seq2seq-kept-\d+/>", "", segment) for segment in seen)


def test_the_input_doctype_or_none(translator):
    out, _ = translated(PAGE, translator)
    assert out.startswith('<!doctype html>\n<!-- a page -->\n<html lang="en">')
    bare, _ = translated("<html><body><p>the light</p></body></html>", translator)
    assert bare.startswith("<html><body><p>") and "DOCTYPE" not in bare.upper()
    fragment, _ = translated("<p>the light</p>\n<p>the water</p>\n", translator)
    assert fragment.startswith("<p>") and fragment.endswith("</p>\n") and "<html" not in fragment


@pytest.mark.parametrize(
    "block",
    [
        "<li>the light <code>rm -rf the light</code></li>",
        "<p>god <kbd>the light</kbd> and <samp>the water</samp></p>",
        '<p>the <span translate="no">light and water</span> night</p>',
        '<p>the day <script>var light = "the light";</script> night</p>',
        "<p>the day <style>b { light: 1 }</style> night</p>",
        "<div>the day <pre>the light\n  the water</pre> night</div>",
    ],
)
def test_code_and_untranslatable_elements_inside_a_block_are_kept_as_one_unit(translator, block):
    out, seen = translated(block, translator)
    inner = lxml.html.fragment_fromstring(block, create_parent="div")
    kept = [e for e in inner.iter() if e.tag in ("code", "kbd", "samp", "script", "style", "pre")
            or e.get("translate") == "no"]  # fmt: skip
    assert kept and len(seen) == 1
    for element in kept:
        assert lxml.html.tostring(element, encoding="unicode", with_tail=False) in out
        assert element.text_content() not in seen[0], seen


def test_each_segment_is_the_translation_of_that_segment(translator):
    out, seen = translated(PAGE, translator)
    page = lxml.html.document_fromstring(out)
    h1 = translator.translate(["in the <b>beginning</b>"], markup="true")[0].text
    assert lxml.html.tostring(page.find(".//h1"), encoding="unicode", with_tail=False) == f"<h1>{h1}</h1>"
    assert page.find(".//title").text == translator.translate(["the beginning"], markup="true")[0].text
    assert "the day" in seen  # a block saying translate="yes" inside translate="no" is translated
    assert "loose water and <em>land</em>" in seen  # text between blocks is a segment
    assert not any("keep" in segment or "Light Co" in segment for segment in seen)
    night = translator.translate(["the night"], markup="true")[0].text
    assert f"<p>\n  {night}\n</p>" in out  # a block's edge whitespace is kept


def test_a_page_is_read_and_written_in_its_declared_charset(translator):
    page = (
        '<html><head><meta charset="iso-8859-1"></head><body><p>the café</p><pre>señor €</pre></body></html>'
    )
    data = page.encode("cp1252").replace("€".encode("cp1252"), b"&#8364;")
    out = translate_document(data, "html", lambda texts, markup: [t + " ñ €" for t in texts])
    assert "<pre>señor &#8364;</pre>".encode("latin-1") in out
    assert "the café ñ &#8364;</p>".encode("latin-1") in out
    assert lxml.html.document_fromstring(out.decode("latin-1")).find(".//p").text == "the café ñ €"


def test_the_server_text_path_gives_the_same_page(translator):
    recorder = Recorder(translator)
    assert translate_document_text(PAGE, "html", recorder) == translated(PAGE, translator)[0]


def test_an_undeclared_charset_is_a_one_line_error(translator):
    with pytest.raises(UserError, match=r"^the html file declares charset 'x-nothing', which is unknown"):
        translate_document(b'<meta charset="x-nothing"><p>a</p>', "html", Recorder(translator))


def test_bom_line_breaks_and_a_file_without_text_come_back_as_they_were(translator):
    upper = lambda texts, markup: [t.upper() for t in texts]  # noqa: E731
    page = "\ufeff<!DOCTYPE html>\r\n<html><body>\r\n<p>the light</p>\r\n</body></html>\r\n"
    out = translate_document(page.encode(), "html", upper)
    assert out == page.replace("the light", "THE LIGHT").encode()
    for nothing in (b"", b"   \n", b"<!-- a comment -->\n", b"<pre>x</pre>\n<script>y()</script>"):
        assert translate_document(nothing, "html", upper) == nothing


def chromium_elements(page: Path, profile: Path) -> list[tuple[Any, ...]]:
    """The elements of the DOM Chromium builds from the file: (tag, attributes, depth, child elements,
    empty), in document order (the page's scripts fail alike on input and output: a.js is missing, the
    inline one reads undefined names)."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}"]  # fmt: skip
    dom = subprocess.run(["chromium", *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert "<html" in dom.stdout, dom.stderr[-2000:]
    root = lxml.html.document_fromstring(dom.stdout)
    return [(e.tag, tuple(sorted(e.attrib.items())), len(list(e.iterancestors())), len(e),
             not e.text_content().strip()) for e in root.iter() if isinstance(e.tag, str)]  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (installed by .ci/run)")
@pytest.mark.parametrize("page", [PAGE, FRAGMENT], ids=["page", "fragment"])
def test_chromium_builds_the_same_page_from_the_translation(translator, tmp_path, page):
    out, _ = translated(page, translator)
    source, target = tmp_path / "page.html", tmp_path / "page.es.html"
    source.write_text(page, encoding="utf-8")
    target.write_text(out, encoding="utf-8")
    before = chromium_elements(source, tmp_path / "profile")
    after = chromium_elements(target, tmp_path / "profile")
    assert len(before) > 8 and [e[:4] for e in after] == [e[:4] for e in before]
    # an element empty in the page is empty in its translation (an empty <span></span> written as
    # <span/> would hold the rest of its block)
    assert all(empty_after for (*_, empty_before), (*_, empty_after) in zip(before, after) if empty_before)

"""format=po (seq2seq.inference.document_formats.po_files): every output passes `msgfmt -c`, opens in polib
with the same entries as the input apart from the new translations, keeps each message's line structure
and edge whitespace, keeps translators' drafts, and is read and written in the charset its header names,
on the CLI and on the server."""

from __future__ import annotations

import polib
import pytest
from hostile_documents import PO, msgfmt_check, po_entries
from in_process import run_translate
from tiny_translator import tiny_translator_fixtures

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.inference.document_formats import translate_document, translate_document_text

OPTIONS = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=8)
checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=1, sharpness=4.0)

LATIN_1 = PO.replace("charset=UTF-8", "charset=ISO-8859-1").replace("the water", "the café water")


def model(translator: Translator):
    return lambda texts, markup: [t.text for t in translator.translate(list(texts), markup=markup)]


@pytest.mark.slow  # msgfmt -c runs in its own process
def test_the_output_passes_msgfmt_and_polib_reads_the_same_entries(translator, tmp_path):
    out = tmp_path / "es.po"
    out.write_bytes(translate_document(PO.encode(), "po", model(translator)))
    msgfmt_check(out)
    assert po_entries(str(out)) == po_entries(PO)
    catalog = polib.pofile(str(out))
    assert all(e.msgstr or all(e.msgstr_plural.values()) for e in catalog if e.msgid != "\n")


def test_a_message_keeps_its_line_breaks_and_edge_whitespace(translator):
    out = translate_document(PO.encode(), "po", model(translator)).decode()
    catalog = {e.msgid: e for e in polib.pofile(out)}
    light = translator.translate(["Usage: %s the light"])[0].text
    assert catalog["Usage: %s the light\n"].msgstr == light + "\n"
    lines = catalog["\nin the beginning\n  the light  "].msgstr.split("\n")
    beginning, the_light = (t.text for t in translator.translate(["in the beginning", "the light"]))
    assert lines == ["", beginning, f"  {the_light}  "]
    assert catalog["\n"].msgstr == "\n"
    plural = catalog["%d day"]
    assert plural.msgstr_plural[0] == translator.translate(["%d day"])[0].text


def test_a_fuzzy_draft_is_kept_and_stays_fuzzy(translator):
    out = translate_document(PO.encode(), "po", model(translator)).decode()
    draft = next(e for e in polib.pofile(out) if e.msgid == "god created")
    assert draft.msgstr == "dios hizo" and "fuzzy" in draft.flags and draft.previous_msgid == "god made"
    done = next(e for e in polib.pofile(out) if e.msgid == "water and land")
    assert done.msgstr == "agua y tierra"


@pytest.mark.slow  # msgfmt -c runs in its own process
def test_a_latin_1_file_is_read_and_written_in_latin_1(translator, tmp_path):
    out = tmp_path / "es.po"
    out.write_bytes(translate_document(LATIN_1.encode("latin-1"), "po", model(translator)))
    msgfmt_check(out)
    catalog = polib.pofile(str(out), encoding="latin-1")
    assert "charset=ISO-8859-1" in catalog.metadata["Content-Type"]
    assert po_entries(str(out)) == po_entries(LATIN_1)  # polib reads the header's charset too
    cafe = next(e for e in catalog if e.msgctxt == "menu")
    assert cafe.msgid == "the café water" and cafe.msgstr == translator.translate(["the café water"])[0].text


@pytest.mark.slow  # msgfmt -c runs in its own process
def test_a_translation_latin_1_cannot_hold_makes_the_file_utf_8(tmp_path):
    out = tmp_path / "es.po"
    out.write_bytes(
        translate_document(LATIN_1.encode("latin-1"), "po", lambda texts, markup: [t + " €" for t in texts])
    )
    msgfmt_check(out)
    catalog = polib.pofile(str(out))
    assert "charset=UTF-8" in catalog.metadata["Content-Type"]
    assert next(e for e in catalog if e.msgctxt == "menu").msgstr == "the café water €"


@pytest.mark.slow  # msgfmt -c runs in its own process
def test_the_cli_translates_a_latin_1_file(checkpoint, translator, tmp_path):
    source, output = tmp_path / "app.po", tmp_path / "es.po"
    source.write_bytes(LATIN_1.encode("latin-1"))
    settings = ["decode=greedy", "decode.max_len_a=0", "decode.max_len_b=8", "format=po"]
    code, stderr = run_translate(f"checkpoint={checkpoint}", *settings, f"input={source}", f"output={output}")
    assert code == 0, stderr[-2000:]
    assert output.read_bytes() == translate_document(LATIN_1.encode("latin-1"), "po", model(translator))
    msgfmt_check(output)


@pytest.mark.parametrize("charset", ["ISO-8859-1", "UTF-8"])
def test_the_server_answers_a_po_file_in_any_declared_charset(checkpoint, translator, charset):
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.metrics import Metrics
    from seq2seq.serve.requests import Limits

    document = LATIN_1.replace("ISO-8859-1", charset)
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as client:
        answer = client.post("/translate", json={"texts": [document], "format": "po", "beam_size": 1})
    assert answer.status_code == 200, answer.text
    text = answer.json()["translations"][0]
    assert text == translate_document_text(document, "po", model(translator))
    assert f"charset={charset}" in text and "the café water" in text
    assert po_entries(text) == po_entries(document)

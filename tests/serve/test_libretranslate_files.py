"""LibreTranslate's file translation (seq2seq.serve.libretranslate_files): a file uploaded as LibreTranslate's
web front end sends it (a multipart form; libretranslatepy has no file method) comes back, downloaded once
from the URL of the answer, as our own API's "format" route translates the same content, and opens in the
library that reads such files; the refusals are LibreTranslate's; the translated files kept on disk are
bounded, expire, and go with the server."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import html5lib
import polib
import pytest
from fastapi.testclient import TestClient
from hostile_documents import PAGE, PO, XLIFF_1, html5_structure, new_targets, po_entries
from multilingual_model import own_multilingual_checkpoint

from seq2seq import Translator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.libretranslate import PREFIX
from seq2seq.serve.libretranslate_files import EXTENSIONS, TranslatedFiles
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import HTTPError, Limits

OPTIONS = {"beam_size": 3, "max_len_a": 0.0, "max_len_b": 8}
KEY = "a-test-key"
LIMITS = Limits(max_chars=200, max_body_bytes=16384)
TEXT = "In the beginning God created the heaven.\n\n  And the earth was without form. And void.\nThe light\n"
SPANISH = "En el principio creó Dios los cielos y la tierra.\nY la luz era buena, y separó Dios la luz.\n"
GERMAN = "Der Mann sieht den Hund und die Frau im Garten, und sie lachen.\n"  # a language the model lacks
DOWNLOADS = f"http://testserver{PREFIX}/download_file/"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("lt-files") / "model.pt")


def app_over(checkpoint: Path, limits: Limits = LIMITS, **settings):
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    metrics = Metrics()
    return create_app(batcher, name="model.pt", limits=limits, metrics=metrics, api_key=KEY, error_delay_ms=0,
                      **settings)  # fmt: skip


@pytest.fixture(scope="module")
def client(checkpoint: Path):
    with TestClient(app_over(checkpoint)) as test_client:
        yield test_client


def upload(client: TestClient, name: str, data: bytes, **fields: str):
    """POST /translate_file as LibreTranslate's front end sends it: the file and the fields, one form."""
    form = {"source": "en", "target": "es", "api_key": KEY, **fields}
    return client.post(f"{PREFIX}/translate_file", data=form, files={"file": (name, data)})


def translated_file(client: TestClient, name: str, data: bytes, **fields: str) -> str:
    """The file's translation, downloaded from the answer's URL (checked to be an attachment named as
    the upload)."""
    answer = upload(client, name, data, **fields)
    assert answer.status_code == 200, answer.text
    url = answer.json()["translatedFileUrl"]
    assert url.startswith(DOWNLOADS) and url.endswith(f".{name}"), url
    download = client.get(url)
    assert download.status_code == 200, download.text
    assert download.headers["content-disposition"] == f'attachment; filename="{name}"'
    assert download.headers["content-type"].startswith(EXTENSIONS[Path(name).suffix][1])
    return download.content.decode("utf-8")


def ours(client: TestClient, body: dict) -> list:
    """Our own API's translations for `body` (sentence splitting as the LibreTranslate API has it)."""
    body = {"src_lang": "en", "tgt_lang": "es", "segment": "sentences", **body}
    answer = client.post("/translate", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["translations"]


@pytest.mark.parametrize("name", ["page.html", "page.htm"])
def test_an_html_page_as_our_format_route_translates_it_and_a_browser_reads_it(client, name) -> None:
    page = translated_file(client, name, PAGE.encode())
    assert [page] == ours(client, {"texts": [PAGE], "format": "html"}) and page != PAGE
    assert html5_structure(page) == html5_structure(PAGE)
    assert html5lib.parse(page, namespaceHTMLElements=False).find("body") is not None


def test_a_po_file_as_our_format_route_translates_it_and_polib_reads_it(client) -> None:
    catalog = translated_file(client, "app.po", PO.encode())
    assert [catalog] == ours(client, {"texts": [PO], "format": "po"})
    assert po_entries(catalog) == po_entries(PO)  # everything but the translations, as it was
    entries = polib.pofile(catalog)
    assert entries[0].msgstr and entries[0].msgstr != polib.pofile(PO)[0].msgstr


@pytest.mark.parametrize("name", ["strings.xlf", "strings.xliff"])
def test_an_xliff_file_as_our_format_route_translates_it(client, name) -> None:
    document = translated_file(client, name, XLIFF_1.encode())
    assert [document] == ours(client, {"texts": [XLIFF_1], "format": "xliff"})
    assert new_targets(document.encode(), XLIFF_1.encode())  # lxml reads it, with new targets


def test_a_text_file_line_by_line_as_our_sentences(client) -> None:
    """Each line a paragraph, split into sentences; blank lines and edge whitespace stay."""
    text = translated_file(client, "letter.txt", TEXT.encode())
    lines = [line.strip() for line in TEXT.splitlines() if line.strip()]
    assert lines == ["In the beginning God created the heaven.", "And the earth was without form. And void.",
                     "The light"]  # fmt: skip
    first, second, third = ours(client, {"texts": lines, "markup": "false"})
    assert text == f"{first}\n\n  {second}\n{third}\n"


def test_a_byte_order_mark_stays_and_is_not_translated(client) -> None:
    marked = translated_file(client, "letter.txt", "\ufeff".encode() + TEXT.encode())
    assert marked == "\ufeff" + translated_file(client, "letter.txt", TEXT.encode())


def test_auto_detects_one_language_for_the_whole_file(client) -> None:
    found = translated_file(client, "carta.txt", SPANISH.encode(), source="auto", target="fr")
    assert found == translated_file(client, "carta.txt", SPANISH.encode(), source="es", target="fr")
    body = {"texts": SPANISH.splitlines(), "src_lang": "es", "tgt_lang": "fr", "markup": "false"}
    assert found == "".join(f"{line}\n" for line in ours(client, body))
    page = f"<p>{SPANISH}</p>".encode()
    assert translated_file(client, "p.html", page, source="auto", target="en") == translated_file(
        client, "p.html", page, source="es", target="en"
    )


@pytest.mark.parametrize(
    ("name", "data", "fields", "status", "error"),
    [
        ("a.txt", b"x", {"api_key": "wrong"}, 403, "Invalid API key"),
        ("a.docx", b"x", {}, 400, "Invalid request: file format not supported (.docx); this server "
         "translates .txt, .html, .htm, .xlf, .xliff, .po files"),
        ("a", b"x", {}, 400, "Invalid request: file format not supported (no extension); this server "
         "translates .txt, .html, .htm, .xlf, .xliff, .po files"),
        ("a.txt", b"the \xff light", {}, 400, "Invalid request: the file is not UTF-8 text (byte 4); save "
         "it as UTF-8"),
        ("a.txt", b"x", {"target": ""}, 400, "Invalid request: missing target parameter"),
        ("a.txt", b"x", {"target": "de"}, 400, "en -> de is not supported; this server translates "
         "en/es/fr -> en/es/fr"),
        ("a.txt", GERMAN.encode(), {"source": "auto"}, 400, "file 0 reads as German (de); this server "
         "translates from en, es, fr only"),
        ("a.txt", b"x" * 20000, {}, 400, r"the body has 20\d\d\d bytes; the limit is 16384"),
        ("a.xlf", b"<xliff version='1.2'><file>", {}, 400, r"the xliff file cannot be parsed.*"),
    ],
)  # fmt: skip
def test_refusals_are_libretranslates(client, name, data, fields, status, error) -> None:
    answer = upload(client, name, data, **fields)
    assert answer.status_code == status, answer.text
    assert set(answer.json()) == {"error"}
    assert answer.json()["error"] == error or re.fullmatch(error, answer.json()["error"]), answer.text


def test_a_form_without_a_file_and_a_body_that_is_no_form(client) -> None:
    missing = {"error": "Invalid request: missing file parameter"}
    form = {"source": "en", "target": "es", "api_key": KEY, "file": "not a file"}
    answer = client.post(f"{PREFIX}/translate_file", data=form, files={"other": ("a.txt", b"x")})
    assert (answer.status_code, answer.json()) == (400, missing)
    answer = client.post(f"{PREFIX}/translate_file", json={"source": "en", "target": "es", "api_key": KEY})
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("Invalid request: missing file parameter")


def test_a_name_is_downloaded_once_and_an_unknown_name_not_at_all(client) -> None:
    url = upload(client, "letter.txt", TEXT.encode()).json()["translatedFileUrl"]
    token = url.removeprefix(DOWNLOADS).split(".")[0]
    assert client.get(f"{DOWNLOADS}{token}.other.txt").status_code == 404  # the whole name, or nothing
    assert client.get(url).status_code == 200
    again = client.get(url)
    assert again.status_code == 404 and again.json()["error"].startswith("Invalid request: no such file")
    assert client.get(f"{DOWNLOADS}..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get(f"{DOWNLOADS}{'0' * 32}.letter.txt").status_code == 404


def test_a_file_name_beyond_ascii_is_the_downloads_name(client) -> None:
    answer = upload(client, "la carta de Dios ñ.txt", "creó la luz".encode(), source="es", target="en")
    url = answer.json()["translatedFileUrl"]
    assert url.startswith(DOWNLOADS) and url.endswith(".la_carta_de_Dios_.txt")  # ASCII in the URL
    disposition = client.get(url).headers["content-disposition"]
    assert disposition == "attachment; filename*=utf-8''la%20carta%20de%20Dios%20%C3%B1.txt"


def test_the_files_on_disk_go_when_the_server_stops(checkpoint) -> None:
    with TestClient(app_over(checkpoint)) as test_client:
        url = upload(test_client, "letter.txt", TEXT.encode()).json()["translatedFileUrl"]
        token = url.removeprefix(DOWNLOADS).split(".")[0]
        [kept] = Path(tempfile.gettempdir()).glob(f"seq2seq-translated-files-*/{token}")
        assert kept.parent.stat().st_mode & 0o077 == 0  # the server's own: no other user reads it
    assert not kept.parent.exists()


def test_a_translation_past_the_request_timeout_is_a_504_and_nothing_is_kept(checkpoint) -> None:
    many = "".join(f"In the beginning God created the heaven {n}.\n" for n in range(3000)).encode()
    limits = Limits(max_body_bytes=1 << 20)  # 3000 lines: seconds of searches
    with TestClient(app_over(checkpoint, limits, request_timeout_s=0.3)) as test_client:
        answer = upload(test_client, "long.txt", many)
    assert answer.status_code == 504
    assert answer.json() == {"error": "no answer within request_timeout_s; the request was dropped"}


def test_files_expire_and_a_bounded_number_is_kept() -> None:
    now = [0.0]
    files = TranslatedFiles(keep_s=10.0, most_files=2, most_bytes=10, clock=lambda: now[0])
    first, second = files.add(b"one", "a.txt"), files.add(b"two", "b.txt")
    third = files.add(b"three", "c.txt")  # the oldest makes room
    assert files.take(first) is None and len(files) == 2 and files.directory is not None
    assert sorted(path.read_bytes() for path in files.directory.iterdir()) == [b"three", b"two"]
    files.add(b"four!", "d.txt")  # 3 + 5 + 5 bytes > 10: the oldest goes
    assert files.take(second) is None and files.size == 10
    now[0] = 10.0  # past keep_s: every file is deleted at the next look
    assert files.take(third) is None and len(files) == 0 and list(files.directory.iterdir()) == []
    with pytest.raises(HTTPError, match="the translated file has 11 bytes; this server keeps at most 10"):
        files.add(b"x" * 11, "e.txt")
    directory = files.directory
    files.close()
    assert not directory.exists() and files.directory is None


def test_names_are_random_and_the_download_is_the_file() -> None:
    files = TranslatedFiles()
    names = {files.add(b"x", "a b.txt") for _ in range(20)}
    assert len(names) == 20 and all(len(name.split(".")[0]) == 32 for name in names)
    name = names.pop()
    assert name.endswith(".a_b.txt") and files.take(name) == (b"x", "a b.txt")
    files.close()

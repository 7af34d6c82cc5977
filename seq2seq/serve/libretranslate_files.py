"""LibreTranslate's file translation, for its web front end and the clients that upload files
(libretranslate-aio's `translate_file`): `POST /translate_file` and `GET /download_file/<name>` under the
LibreTranslate API's prefix (seq2seq.serve.libretranslate registers them).

An upload is a multipart form as LibreTranslate takes it: `file`, `source` (a code, or "auto"), `target`,
`api_key`; the whole body within `max_body_bytes`, the file UTF-8 text. Its extension names its format
(EXTENSIONS): .txt (each line a paragraph; its edge whitespace and the blank lines stay), .html/.htm,
.xlf/.xliff and .po, the document formats of our own API's "format" route, translated by the same path
(ServedModels.translate_documents) with the LibreTranslate API's routing by language pair and its
`segment=sentences` (each segment split into sentences, as its /translate does). "auto" detects one
language per file, over its segments together, as LibreTranslate does, not one per segment. The answer
is `{"translatedFileUrl": ".../download_file/<name>"}`, within request_timeout_s of the upload.

Storage: each translation waits on disk, in a temporary directory of the server's own (made at the first
upload, removed when the server shuts down), under a random name (128 bits, the capability to download
it: the download needs no key, as LibreTranslate's does not). A name is downloaded once, as an attachment
with the uploaded file's name, and the file is deleted then; one never downloaded is deleted KEEP_S
seconds after its translation. At most MOST_FILES files and MOST_BYTES bytes are kept: a new one makes
room by deleting the oldest, so neither a flood of uploads nor unclaimed translations fill the disk.

Errors are LibreTranslate's `{"error": ...}`: 400 for a missing file, a format not listed, a file that is
not UTF-8, a missing or unserved language, a body over the limit or a file the format's reader refuses;
403 for a wrong API key; 404 for a name unknown, already downloaded or expired; 429 when the queue is
full; 504 past request_timeout_s.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from seq2seq.serve.requests import HTTPError, Limits, ParsedRequest, read_limited
from seq2seq.serve.served_models import Segments, ServedModels

log = logging.getLogger("seq2seq.serve")
# A file's extension -> its format (seq2seq.inference.document_formats; "text": lines, here) and media type.
EXTENSIONS = {
    ".txt": ("text", "text/plain"), ".html": ("html", "text/html"), ".htm": ("html", "text/html"),
    ".xlf": ("xliff", "application/xliff+xml"), ".xliff": ("xliff", "application/xliff+xml"),
    ".po": ("po", "text/x-gettext-translation"),
}  # fmt: skip
KEEP_S = 600.0  # a translated file not downloaded within 10 minutes is deleted
MOST_FILES = 100  # translated files kept at once
MOST_BYTES = 256 << 20  # and their bytes
MOST_FIELDS = 16  # form fields beside the file
_GAPS = re.compile(r"(\s*[\r\n]\s*|^\s+|\s+$)")  # a text file's line breaks with their edge whitespace


@dataclass(frozen=True)
class Adapter:
    """What the file routes share with the LibreTranslate API's other routes."""

    prefix: str
    status: dict[int, int]  # our refusals' statuses as LibreTranslate answers them
    check_key: Callable[[dict[str, Any]], None]  # 403 for a wrong API key field
    pair: Callable[[dict[str, Any]], tuple[str, str]]  # (source, target); 400 for a pair not served


def add_file_routes(
    app: FastAPI, models: ServedModels, adapter: Adapter, *, limits: Limits, timeout: float
) -> TranslatedFiles:
    """POST {prefix}/translate_file and GET {prefix}/download_file/{name}; returns their store of translated
    files, for the server to close at shutdown."""
    files = TranslatedFiles()

    @app.post(f"{adapter.prefix}/translate_file")
    async def translate_file(request: Request) -> JSONResponse:
        start, deadline = time.perf_counter(), asyncio.get_running_loop().time() + timeout
        try:
            upload = await _upload(request, limits, deadline)
            adapter.check_key(upload.fields)
            translated = await _translated(upload, models, adapter, deadline)
            name = files.add(translated, upload.name)
        except HTTPError as error:
            status = adapter.status.get(error.status, error.status)
            return JSONResponse({"error": error.message}, status_code=status)
        log.info("POST %s/translate_file: %s, %d bytes, %.0f ms", adapter.prefix, upload.name[-40:],
                 len(upload.data), (time.perf_counter() - start) * 1000)  # fmt: skip
        return JSONResponse({"translatedFileUrl": str(request.url_for("libretranslate_download", name=name))})

    @app.get(f"{adapter.prefix}/download_file/{{name}}", name="libretranslate_download")
    async def download_file(name: str) -> Response:
        kept = files.take(name)
        if kept is None:
            return JSONResponse({"error": "Invalid request: no such file; a translated file is downloaded "
                                 f"once, within {files.keep_s / 60:g} minutes"}, status_code=404)  # fmt: skip
        data, filename = kept
        media = EXTENSIONS.get(PurePosixPath(filename).suffix.lower(), ("", "application/octet-stream"))[1]
        return Response(data, media_type=media, headers={"Content-Disposition": _attachment(filename)})

    return files


@dataclass(frozen=True)
class Upload:
    """An upload's file (`name` None: the form has none) and its other fields."""

    name: str | None
    data: bytes
    fields: dict[str, Any]


async def _upload(request: Request, limits: Limits, deadline: float) -> Upload:
    """The multipart form of the request, its body read within max_body_bytes by `deadline`."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "multipart/form-data":
        raise HTTPError(400, "Invalid request: missing file parameter (send a multipart/form-data form)")
    remaining = max(0.0, deadline - asyncio.get_running_loop().time())
    try:
        body = await asyncio.wait_for(read_limited(request, limits.max_body_bytes), remaining)
    except asyncio.TimeoutError:
        raise HTTPError(408, "the body did not arrive within request_timeout_s") from None

    async def stream() -> AsyncIterator[bytes]:
        yield body

    parser = MultiPartParser(request.headers, stream(), max_files=1, max_fields=MOST_FIELDS)
    try:
        form = await parser.parse()
    except MultiPartException as error:
        raise HTTPError(400, f"Invalid request: the form cannot be read ({error.message})") from None
    file = form.get("file")
    fields = {key: value for key, value in form.multi_items() if isinstance(value, str)}
    if not isinstance(file, UploadFile):
        return Upload(None, b"", fields)
    data = await file.read()
    await file.close()
    return Upload(PurePosixPath((file.filename or "").replace("\\", "/")).name, data, fields)


async def _translated(upload: Upload, models: ServedModels, adapter: Adapter, deadline: float) -> bytes:
    """The uploaded file translated, in its format and in UTF-8."""
    if not upload.name:
        raise HTTPError(400, "Invalid request: missing file parameter")
    source, target = adapter.pair(upload.fields)
    extension = PurePosixPath(upload.name).suffix.lower()
    if extension not in EXTENSIONS:
        raise HTTPError(400, f"Invalid request: file format not supported ({extension or 'no extension'}); "
                             f"this server translates {', '.join(EXTENSIONS)} files")  # fmt: skip
    bom = codecs.BOM_UTF8 if upload.data.startswith(codecs.BOM_UTF8) else b""  # kept, and not translated
    try:
        text = upload.data[len(bom) :].decode("utf-8")
    except UnicodeDecodeError as error:
        raise HTTPError(400, f"Invalid request: the file is not UTF-8 text (byte {len(bom) + error.start}); "
                             "save it as UTF-8") from None  # fmt: skip
    fmt = EXTENSIONS[extension][0]
    options = models.default.translator.options.replace(nbest=1)
    parsed = ParsedRequest([text], options, src_lang=source, tgt_lang=target, format=fmt, segment="sentences")
    document = _text_lines if fmt == "text" else None
    [translated], _ = await models.translate_documents(
        parsed, deadline, route=True, document=document, auto_per_file=True
    )
    return bom + translated.encode("utf-8")


def _text_lines(text: str, segments: Segments) -> str:
    """A plain text file translated line by line (each line a paragraph, as plain text), its line breaks,
    blank lines and each line's edge whitespace kept."""
    pieces = _GAPS.split(text)  # lines at even places (without edge whitespace; may be empty), gaps between
    done = iter(segments([line for line in pieces[::2] if line], "false"))
    return "".join(next(done) if index % 2 == 0 and piece else piece for index, piece in enumerate(pieces))


def _attachment(filename: str) -> str:
    """Content-Disposition for `filename` (RFC 6266; a name beyond ASCII as filename*, percent-encoded)."""
    quoted = quote(filename)
    if quoted != filename:
        return f"attachment; filename*=utf-8''{quoted}"
    return f'attachment; filename="{filename}"'


def _url_name(filename: str) -> str:
    """A file name as it may stand in a URL: ASCII letters, digits, `.`, `_` and `-`, at most 100."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", filename).strip("._") or "file")[-100:]


@dataclass(frozen=True)
class _Kept:
    path: Path
    filename: str  # the uploaded file's name: the download's
    size: int
    expires: float  # on the store's clock


class TranslatedFiles:
    """The translated files waiting for their download, in a temporary directory of their own (made at the
    first file, removed by close()): each read once and deleted then, or `keep_s` seconds after it came;
    at most `most_files` files and `most_bytes` bytes, the oldest deleted to make room. `clock`: seconds."""

    def __init__(
        self, *, keep_s: float = KEEP_S, most_files: int = MOST_FILES, most_bytes: int = MOST_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.keep_s, self.most_files, self.most_bytes, self.clock = keep_s, most_files, most_bytes, clock
        self._directory: tempfile.TemporaryDirectory | None = None
        self._kept: dict[str, _Kept] = {}  # by name, oldest first

    @property
    def directory(self) -> Path | None:
        """Where the files are (None before the first and after close())."""
        return None if self._directory is None else Path(self._directory.name)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def size(self) -> int:
        """The bytes kept."""
        return sum(kept.size for kept in self._kept.values())

    def add(self, data: bytes, filename: str) -> str:
        """Keeps `data`, the translation of the file `filename`; its name in the download URL."""
        if len(data) > self.most_bytes:
            raise HTTPError(413, f"the translated file has {len(data)} bytes; this server keeps at most "
                                 f"{self.most_bytes}")  # fmt: skip
        self._expire()
        while self._kept and (len(self._kept) >= self.most_files or self.size + len(data) > self.most_bytes):
            self._delete(next(iter(self._kept)))
        if self._directory is None:
            self._directory = tempfile.TemporaryDirectory(prefix="seq2seq-translated-files-")
        token = secrets.token_hex(16)
        path = Path(self._directory.name) / token
        with open(path, "xb") as out:  # the directory is the server's alone (mode 700)
            out.write(data)
        name = f"{token}.{_url_name(filename)}"
        self._kept[name] = _Kept(path, filename, len(data), self.clock() + self.keep_s)
        return name

    def take(self, name: str) -> tuple[bytes, str] | None:
        """The file kept under `name` and its file name, deleted (None: no such name, or no longer)."""
        self._expire()
        kept = self._kept.get(name)
        if kept is None:
            return None
        data = kept.path.read_bytes()
        self._delete(name)
        return data, kept.filename

    def close(self) -> None:
        """Deletes every file and the directory."""
        self._kept.clear()
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None

    def _expire(self) -> None:
        now = self.clock()
        for name in [name for name, kept in self._kept.items() if kept.expires <= now]:
            self._delete(name)

    def _delete(self, name: str) -> None:
        self._kept.pop(name).path.unlink(missing_ok=True)


__all__ = ["EXTENSIONS", "Adapter", "TranslatedFiles", "add_file_routes"]

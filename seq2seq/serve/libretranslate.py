"""The LibreTranslate API, for the clients that speak it (libretranslatepy, Mastodon, Discourse, Weblate,
browser add-ons): `POST /translate`, `POST /detect`, `GET /languages` and `GET /frontend/settings` under
the prefix PREFIX, so that such a client takes `http://host:8080/libretranslate/` as its server; file
translation (`POST /translate_file`, `GET /download_file/<name>`) is seq2seq.serve.libretranslate_files.

An adapter only: each request becomes the one TranslationRequest of seq2seq.inference.request and goes
through the same checks, batches and limits as our own API (seq2seq.serve.requests, the batcher).
Fields and answers follow LibreTranslate's server: `q` (a string or a list), `source` (a code or
"auto", detected per text), `target`, `format` ("text": plain text; "html": markup kept),
`alternatives` (n-best beyond the first, repeats left out), `api_key`; the answer's `translatedText`
(a string, or a list for a list), `detectedLanguage` per text for "auto" (confidence 0-100), and
`alternatives`. Errors are `{"error": ...}`: 400 for a missing, unsupported or over-long field, 403 for
a wrong API key, 429 when the queue is full; bodies are JSON or a form, as LibreTranslate takes them.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from seq2seq.errors import UserError
from seq2seq.inference.api import AUTO, language_name
from seq2seq.serve.libretranslate_files import EXTENSIONS, Adapter, TranslatedFiles, add_file_routes
from seq2seq.serve.requests import HTTPError, Limits, ParsedRequest, read_limited
from seq2seq.serve.served_models import Routed, ServedModels

PREFIX = "/libretranslate"
FORMATS = {"text": "false", "html": "true"}  # LibreTranslate's format -> our markup setting
STATUS = {413: 400, 422: 400, 503: 429}  # our refusals as LibreTranslate answers them


def add_libretranslate_routes(
    app: FastAPI, models: ServedModels, *, limits: Limits, api_key: str | None, timeout: float
) -> TranslatedFiles:
    """The LibreTranslate routes under PREFIX, over the server's models; returns the store of translated
    files, which the server closes at shutdown."""

    @app.post(f"{PREFIX}/translate")
    async def translate(request: Request) -> JSONResponse:
        return await _answer(
            request, limits, api_key, lambda fields: _translate(fields, models, limits, timeout)
        )

    @app.post(f"{PREFIX}/detect")
    async def detect_route(request: Request) -> JSONResponse:
        return await _answer(request, limits, api_key, lambda fields: _detect(fields, models))

    @app.get(f"{PREFIX}/languages")
    async def languages() -> JSONResponse:
        return JSONResponse(models.listed())

    @app.get(f"{PREFIX}/frontend/settings")
    async def settings() -> JSONResponse:
        return JSONResponse(frontend_settings(models, limits, api_key))

    check_key, pair = (lambda fields: _check_key(fields, api_key)), (lambda fields: _pair(fields, models))
    adapter = Adapter(PREFIX, STATUS, check_key, pair)  # what the file routes share with these
    return add_file_routes(app, models, adapter, limits=limits, timeout=timeout)


async def _answer(request: Request, limits: Limits, api_key: str | None, work: Callable) -> JSONResponse:
    """`work(fields)`'s answer, or LibreTranslate's {"error"} with its status."""
    try:
        fields = await _fields(request, limits)
        _check_key(fields, api_key)
        return JSONResponse(await work(fields))
    except HTTPError as error:
        return JSONResponse({"error": error.message}, status_code=STATUS.get(error.status, error.status))


async def _fields(request: Request, limits: Limits) -> dict[str, Any]:
    """The request's fields: a JSON object, or a form (a field given twice is a list, as `q` may be)."""
    body = await read_limited(request, limits.max_body_bytes)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/json":
        try:
            fields = json.loads(body or b"{}")
        except ValueError:
            raise HTTPError(400, "Invalid request: the body is not valid JSON") from None
        if not isinstance(fields, dict):
            raise HTTPError(400, "Invalid request: the body must be a JSON object")
        return fields
    try:
        form = parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        raise HTTPError(400, "Invalid request: the form is not UTF-8") from None
    return {name: values[0] if len(values) == 1 else values for name, values in form.items()}


def _check_key(fields: dict[str, Any], api_key: str | None) -> None:
    given = fields.get("api_key")
    if api_key is not None and not (
        isinstance(given, str) and hmac.compare_digest(given.encode(), api_key.encode())
    ):
        raise HTTPError(403, "Invalid API key")


def _texts(fields: dict[str, Any], limits: Limits) -> tuple[list[str], bool]:
    """`q` as a list of texts, and whether it was a list; checked against the server's limits."""
    q = fields.get("q")
    if q is None or q == "":
        raise HTTPError(400, "Invalid request: missing q parameter")
    texts = q if isinstance(q, list) else [q]
    if not all(isinstance(text, str) for text in texts) or not texts:
        raise HTTPError(400, "Invalid request: q must be a string or a list of strings")
    if len(texts) > limits.max_sentences:
        raise HTTPError(400, f"Invalid request: {len(texts)} texts; the limit is {limits.max_sentences}")
    longest = max(len(text) for text in texts)
    if longest > limits.max_chars:
        raise HTTPError(400, f"Invalid request: request ({longest}) exceeds text limit ({limits.max_chars})")
    return list(texts), isinstance(q, list)


async def _translate(
    fields: dict[str, Any], models: ServedModels, limits: Limits, timeout: float
) -> dict[str, Any]:
    """POST /translate: our search for the request's texts, answered in LibreTranslate's fields."""
    texts, listed = _texts(fields, limits)
    source, target = _pair(fields, models)
    fmt = str(fields.get("format") or "text")
    if fmt not in FORMATS:
        raise HTTPError(400, f"Invalid request: format {fmt!r} is not supported; use text or html")
    count = _count(fields.get("alternatives", 0), limit=limits.max_beam_size - 1)
    defaults = models.default.translator.options
    options = defaults.replace(nbest=count + 1, beam_size=max(defaults.beam_size, count + 1))
    parsed = ParsedRequest(
        texts, options, src_lang=source, tgt_lang=target, markup=FORMATS[fmt], segment="sentences"
    )
    try:
        routed = await asyncio.wait_for(models.translate(parsed, route=True), timeout)
    except asyncio.TimeoutError:
        raise HTTPError(504, f"no answer within request_timeout_s={timeout:g} s") from None
    return _translated(routed, listed, count)


def _translated(routed: Routed, listed: bool, count: int) -> dict[str, Any]:
    """LibreTranslate's answer: translatedText, then alternatives and detectedLanguage when they apply."""
    best = [nbest[0].text for nbest in routed.ranked]
    others = [
        list(dict.fromkeys(t.text for t in nbest[1:] if t.text != nbest[0].text))[:count]
        for nbest in routed.ranked
    ]
    answer: dict[str, Any] = {"translatedText": best if listed else best[0]}
    if count:
        answer["alternatives"] = others if listed else others[0]
    if routed.detected is not None:
        found = [_detected(item) for item in routed.detected]
        answer["detectedLanguage"] = found if listed else found[0]
    return answer


def _pair(fields: dict[str, Any], models: ServedModels) -> tuple[str, str]:
    """(source, target) checked against what the models serve; 400 naming the pairs served."""
    source, target = fields.get("source"), fields.get("target")
    for name, value in (("source", source), ("target", target)):
        if not isinstance(value, str) or not value:
            raise HTTPError(400, f"Invalid request: missing {name} parameter")
    served = {item["code"]: item["targets"] for item in models.listed()}
    if source != AUTO and source not in served:
        raise HTTPError(
            400, f"{source} is not supported; this server translates from {', '.join(sorted(served))}"
        )
    targets = sorted({code for codes in served.values() for code in codes})
    if target not in (targets if source == AUTO else served[source]):
        raise HTTPError(400, f"{source} -> {target} is not supported; this server translates "
                             f"{models.pairs_named()}")  # fmt: skip
    return source, target


def _count(value: Any, *, limit: int) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise HTTPError(400, f"Invalid request: alternatives must be a number, got {value!r}") from None
    if not 0 <= count <= limit:
        raise HTTPError(400, f"Invalid request: alternatives must be between 0 and {limit}")
    return count


async def _detect(fields: dict[str, Any], models: ServedModels) -> list:
    """POST /detect: per text, its language among those the models read (a list for a list)."""
    q = fields.get("q")
    if not isinstance(q, (str, list)) or not q:
        raise HTTPError(400, "Invalid request: missing q parameter")
    texts = q if isinstance(q, list) else [q]
    try:
        found = [[_detected(item)] for item in models.detect(texts)]
    except UserError as error:
        raise HTTPError(400, str(error)) from None
    return found if isinstance(q, list) else found[0]


def _detected(item: Any) -> dict[str, Any]:
    return {"confidence": round(100 * item.confidence, 1), "language": item.code or item.iso}


def frontend_settings(models: ServedModels, limits: Limits, api_key: str | None) -> dict[str, Any]:
    """GET /frontend/settings: the limits and defaults a LibreTranslate front end reads."""
    languages = models.listed()
    source = languages[0] if languages else {"code": "auto", "name": "Auto Detect", "targets": []}
    target = source["targets"][0] if source["targets"] else source["code"]
    return {
        "charLimit": limits.max_chars, "frontendTimeout": 500, "apiKeys": api_key is not None,
        "keyRequired": api_key is not None, "suggestions": False, "filesTranslation": True,
        "supportedFilesFormat": list(EXTENSIONS),
        "language": {"source": {"code": source["code"], "name": source["name"]},
                     "target": {"code": target, "name": language_name(target)}},
    }  # fmt: skip


__all__ = ["PREFIX", "add_libretranslate_routes", "frontend_settings"]

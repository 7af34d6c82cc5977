"""The HTTP API over a Translator (FastAPI, the `serve` extra): POST /translate, GET /health, /stats and /

Every bad request gets a 4xx JSON answer {"error": "..."} naming the problem; none reaches the model.
A body larger than `max_body_bytes` is refused as soon as its size is known (Content-Length, or while
it streams in), before it is read whole.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from seq2seq.decode.options import SearchOptions
from seq2seq.serve.batcher import BatchingTranslator

log = logging.getLogger("seq2seq.serve")


@dataclass(frozen=True)
class Limits:
    """What one request may ask for."""

    max_sentences: int = 64
    max_chars: int = 2000
    max_beam_size: int = 16
    max_body_bytes: int = 1 << 20


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def parse_request(body: bytes, limits: Limits, defaults: SearchOptions) -> tuple[list[str], SearchOptions]:
    """(texts, search options) from a request body (one string counts as a list of one), or BadRequest."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadRequest(400, f"the body is not valid JSON ({error.__class__.__name__})") from None
    if not isinstance(payload, dict):
        raise BadRequest(422, 'the body must be a JSON object like {"text": ["..."]}')
    unknown = sorted(set(payload) - {"text", "beam_size", "nbest"})
    if unknown:
        raise BadRequest(422, f"unknown field(s) {', '.join(unknown)}; allowed: text, beam_size, nbest")
    texts = [payload["text"]] if isinstance(payload.get("text"), str) else payload.get("text")
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise BadRequest(422, '"text" must be a string or a list of strings')
    if not texts or len(texts) > limits.max_sentences:
        raise BadRequest(422, f'"text" must hold 1 to {limits.max_sentences} sentences, got {len(texts)}')
    longest = max(range(len(texts)), key=lambda i: len(texts[i]))
    if len(texts[longest]) > limits.max_chars:
        raise BadRequest(
            413, f"sentence {longest} has {len(texts[longest])} characters; the limit is {limits.max_chars}"
        )
    return texts, _options(payload, limits, defaults)


def _options(payload: dict[str, Any], limits: Limits, defaults: SearchOptions) -> SearchOptions:
    beam_size, nbest = payload.get("beam_size", defaults.beam_size), payload.get("nbest", 1)
    for name, value in (("beam_size", beam_size), ("nbest", nbest)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadRequest(422, f'"{name}" must be an integer, got {json.dumps(value)}')
    if not 1 <= beam_size <= limits.max_beam_size:
        raise BadRequest(422, f'"beam_size" must be between 1 and {limits.max_beam_size}, got {beam_size}')
    if not 1 <= nbest <= beam_size:
        raise BadRequest(422, f'"nbest" must be between 1 and beam_size ({beam_size}), got {nbest}')
    return defaults.replace(beam_size=beam_size, nbest=nbest)


def create_app(
    batcher: BatchingTranslator, *, name: str, languages: tuple[str, str] | None, limits: Limits
) -> Any:
    """The FastAPI application; `batcher` is closed when the application shuts down."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        batcher.close()  # every queued request is answered first

    app = FastAPI(title="seq2seq", lifespan=lifespan, docs_url=None, redoc_url=None)
    page = resources.files("seq2seq.serve").joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse)
    async def index() -> str:
        return page

    @app.get("/health")
    async def health() -> dict[str, Any]:
        translator = batcher.translator
        return {"status": "ok", "model": name, "step": translator.step, "engine": translator.engine.name,
                "source_language": languages[0] if languages else None,
                "target_language": languages[1] if languages else None}  # fmt: skip

    @app.get("/stats")
    async def stats() -> dict[str, int]:
        return dict(batcher.stats.__dict__)

    @app.post("/translate")
    async def translate(request: Request) -> JSONResponse:
        start = time.perf_counter()
        try:
            body = await read_limited(request, limits.max_body_bytes)
            texts, options = parse_request(body, limits, batcher.translator.options)
        except BadRequest as error:
            log.info("POST /translate -> %d: %s", error.status, error.message)
            return JSONResponse({"error": error.message}, status_code=error.status)
        nbest = await batcher.translate(texts, options)
        milliseconds = (time.perf_counter() - start) * 1000
        answer: dict[str, Any] = {"model": name, "milliseconds": round(milliseconds, 1)}
        if options.nbest == 1:
            answer["translations"] = [pairs[0][0] for pairs in nbest]
        else:
            answer["translations"] = [[text for text, _ in pairs] for pairs in nbest]
            answer["scores"] = [[round(score, 4) for _, score in pairs] for pairs in nbest]
        log.info("POST /translate: %d sentence(s), %d characters, beam %d, %.0f ms",
                 len(texts), sum(map(len, texts)), options.beam_size, milliseconds)  # fmt: skip
        return JSONResponse(answer)

    return app


async def read_limited(request: Request, max_bytes: int) -> bytes:
    """The request body, refused (413) once it is known to exceed `max_bytes`, before it is read whole."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BadRequest(413, f"the body has {declared} bytes; the limit is {max_bytes}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BadRequest(413, f"the body exceeds the limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)

"""The HTTP API over a Translator (FastAPI, the `serve` extra): POST /translate, GET /health, /stats,
/metrics and / (page.html, a plain HTML form).

Every bad request gets a 4xx JSON answer {"error": "..."} naming the problem, before it joins a batch
(requests.py); overload, a dead model thread and a request out of time get 503/504; nothing unexpected
escapes as a plain-text 500 (the handler below answers a JSON 500 and the log has the traceback).

A refusal (400, 401, 413, 415, 422 from POST /translate) is answered after `error_delay_ms`: waiting
costs the server nothing, and a client that sends bad requests one after another then sends ~10 a
second (at the default delay) instead of as many as the event loop can refuse, each of which costs it
CPU time: without the delay one such client cut 32 good clients' throughput to a fraction on a tiny
model (the figures: benchmarks/results.md). It does not stop many bad clients at once; a
rate-limiting proxy in front does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from seq2seq.inference.api import nbest_json
from seq2seq.serve.batcher import Answer, BatchingTranslator
from seq2seq.serve.libretranslate import add_libretranslate_routes
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import (
    CLIENT_CLOSED,
    HTTPError,
    Limits,
    ParsedRequest,
    parse_request,
    read_limited,
    require_json,
)
from seq2seq.serve.security import allow_origins, check_api_key
from seq2seq.serve.served_models import Routed, ServedModel, ServedModels

log = logging.getLogger("seq2seq.serve")
T = TypeVar("T")
INTERNAL_ERROR = "internal error; the server log has the details"
REFUSALS = {400, 401, 413, 415, 422}  # the request's own fault, known without the model: delayed answers


def create_app(
    models: ServedModels | BatchingTranslator,
    *,
    name: str = "model",
    limits: Limits,
    metrics: Metrics,
    request_timeout_s: float = 60.0,
    error_delay_ms: float = 100.0,
    api_key: str | None = None,
    cors_origins: Sequence[str] = (),
) -> Any:
    """The FastAPI application over the server's models (one model: its batcher, called `name`); they are
    closed when the application shuts down."""
    if isinstance(models, BatchingTranslator):
        models = ServedModels([ServedModel(name, models)])

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        models.close()  # every queued request is answered first
        translated_files.close()  # the LibreTranslate API's files not downloaded: deleted

    app = FastAPI(title="seq2seq", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    allow_origins(app, list(cors_origins))
    metrics.watch(lambda: models.waiting, lambda: models.healthy)
    page = resources.files("seq2seq.serve").joinpath("page.html").read_text(encoding="utf-8")
    _add_error_handlers(app)
    translated_files = add_libretranslate_routes(
        app, models, limits=limits, api_key=api_key, timeout=request_timeout_s
    )
    _add_monitoring(app, models, metrics, api_key=api_key, error_delay_ms=error_delay_ms)

    @app.get("/", response_class=HTMLResponse)
    async def index() -> str:
        return page

    @app.post("/translate")
    async def translate(request: Request) -> Response:
        start = time.perf_counter()
        try:
            response = await _translate(request, models, limits, request_timeout_s, api_key)
        except HTTPError as error:
            log.info("POST /translate -> %d: %s", error.status, error.message)
            if error.status in REFUSALS:
                await asyncio.sleep(error_delay_ms / 1000)
            response = error_response(error)
        except Exception:  # a bug, not the request's fault; the request's own 500, logged
            log.exception("POST /translate failed")
            response = JSONResponse({"error": INTERNAL_ERROR}, status_code=500)
        metrics.observe_request(response.status_code, time.perf_counter() - start)
        return response

    return app


def _add_monitoring(
    app: FastAPI, models: ServedModels, metrics: Metrics, *, api_key: str | None, error_delay_ms: float
) -> None:
    """GET /health (open, 503 once a model thread has stopped), /stats and /metrics (need the key)."""

    @app.get("/health")
    async def health() -> JSONResponse:
        healthy, first = models.healthy, models.default.translator
        languages = first.languages or (None, None)
        answer = {"status": "ok" if healthy else "unhealthy", "model": models.default.name,
                  "step": first.step, "engine": first.engine.name, "src_lang": languages[0],
                  "tgt_lang": languages[1], "api_key_required": api_key is not None,
                  "models": [_described(model) for model in models],
                  # the old names of src_lang and tgt_lang, still sent for one release
                  "source_language": languages[0], "target_language": languages[1]}  # fmt: skip
        if not healthy:
            answer["error"] = "a model thread has stopped; restart the server"
        return JSONResponse(answer, status_code=200 if healthy else 503)

    @app.get("/stats")
    async def stats(request: Request) -> Response:
        if (refused := await _refused(request, api_key, error_delay_ms)) is not None:
            return refused
        return JSONResponse(models.stats())

    @app.get("/metrics")
    async def metrics_page(request: Request) -> Response:
        if (refused := await _refused(request, api_key, error_delay_ms)) is not None:
            return refused
        return Response(metrics.exposition(), media_type=metrics.content_type)


def _described(model: ServedModel) -> dict[str, Any]:
    """A model in GET /health: its name, engine, step, and the languages it reads and writes."""
    translator, languages = model.translator, model.languages
    return {"name": model.name, "engine": translator.engine.name, "step": translator.step,
            "healthy": model.batcher.healthy, "src_langs": list(languages.sources),
            "tgt_langs": list(languages.targets)}  # fmt: skip


async def _translate(
    request: Request, models: ServedModels, limits: Limits, timeout: float, api_key: str | None
) -> Response:
    """Check, read, parse and encode the request, then wait for its translations: at most `timeout`
    seconds from its arrival, and only while its client is still there."""
    start, deadline = time.perf_counter(), asyncio.get_running_loop().time() + timeout
    check_api_key(request, api_key)
    require_json(request)
    try:
        body = await asyncio.wait_for(read_limited(request, limits.max_body_bytes), timeout)
    except asyncio.TimeoutError:
        raise HTTPError(408, f"the body did not arrive within request_timeout_s={timeout:g} s") from None
    parsed = parse_request(body, limits, models.default.translator.options)
    texts, options, confidence = parsed.texts, parsed.options, parsed.confidence
    if parsed.format != "text":
        return await _files(models, parsed, start, deadline)
    routed = await _while_client_waits(models.translate(parsed), request, deadline, timeout)
    milliseconds = (time.perf_counter() - start) * 1000
    answer: dict[str, Any] = {"model": _model_name(routed), "milliseconds": round(milliseconds, 1)}
    answer.update(_translations(routed.ranked, nbest=options.nbest, confidence=confidence))
    if len(models) > 1:
        answer["models"] = routed.names
    log.info("POST /translate: %d sentence(s), %d characters, beam %d, %.0f ms",
             len(texts), sum(map(len, texts)), options.beam_size, milliseconds)  # fmt: skip
    return JSONResponse(answer)


def _model_name(routed: Routed) -> str:
    """The answer's "model": the name of the model that translated the request (several: joined by +)."""
    return "+".join(dict.fromkeys(routed.names)) or "none"


async def _files(models: ServedModels, parsed: ParsedRequest, start: float, deadline: float) -> Response:
    """ "format": html | xliff | po: each text is a whole file, translated segment by segment through the
    batcher (ServedModels.translate_documents)."""
    files, names = await models.translate_documents(parsed, deadline)
    milliseconds = (time.perf_counter() - start) * 1000
    log.info("POST /translate: %d %s file(s), %.0f ms", len(files), parsed.format, milliseconds)
    name = "+".join(names) or models.default.name
    return JSONResponse({"model": name, "milliseconds": round(milliseconds, 1), "translations": files})


def _translations(answer: Answer, *, nbest: int, confidence: bool) -> dict[str, Any]:
    """The answer's "translations": per text a string, or with `confidence` its record (Translation.to_json:
    {"translation", "confidence", "mean_log_prob", "tokens", "token_probs"}); with nbest > 1, per text the
    list of its n-best records, best first, each with its "score" (nbest_json), and, for one release, the
    deprecated "scores" (per text, its n-best scores). A request with constraints also gets
    "constraints_met" and "constraints_total" (phrases met and asked for, per text, of its best
    translation; "constraints" is the deprecated old name of "constraints_total", still sent for one
    release) and "engines" (which engine translated each text)."""
    best = [ranked[0] for ranked in answer]
    fields: dict[str, Any] = {}
    if nbest > 1:
        fields["translations"] = [nbest_json(ranked, confidence=confidence) for ranked in answer]
        fields["scores"] = [[round(translation.score, 4) for translation in ranked] for ranked in answer]
    else:
        fields["translations"] = [
            translation.to_json() if confidence else translation.text for translation in best
        ]
    # Any text, not the first: an empty text has no search, so no constraint count (null).
    if any(translation.constraints_total is not None for translation in best):
        fields["constraints_met"] = [translation.constraints_met for translation in best]
        fields["constraints_total"] = [translation.constraints_total for translation in best]
        fields["constraints"] = fields["constraints_total"]  # deprecated: the old name, for one release
        fields["engines"] = [translation.engine for translation in best]
    return fields


async def _while_client_waits(work: Awaitable[T], request: Request, deadline: float, timeout: float) -> T:
    """The result of `work`, unless the deadline passes (504) or the client disconnects (499) first:
    then `work` is cancelled, which drops the request from the queue if its search has not started."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnect(request))
    try:
        remaining = max(0.0, deadline - asyncio.get_running_loop().time())
        done, _ = await asyncio.wait({task, gone}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
    if task in done:
        return task.result()
    await asyncio.gather(task, return_exceptions=True)  # let the cancellation drop the queued work
    if gone in done:
        gone.exception()  # retrieved: a receive that failed also means the client is lost
        raise HTTPError(CLIENT_CLOSED, "the client closed the connection before its answer")
    raise HTTPError(504, f"no answer within request_timeout_s={timeout:g} s; the request was dropped")


async def _disconnect(request: Request) -> None:
    """Returns when the client closes the connection (the body has been read: nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _refused(request: Request, api_key: str | None, error_delay_ms: float) -> Response | None:
    """The 401 answer (after the refusal delay) for a request without the API key, else None."""
    try:
        check_api_key(request, api_key)
    except HTTPError as error:
        await asyncio.sleep(error_delay_ms / 1000)
        return error_response(error)
    return None


def error_response(error: HTTPError) -> JSONResponse:
    return JSONResponse({"error": error.message}, status_code=error.status, headers=error.headers)


def _add_error_handlers(app: FastAPI) -> None:
    """JSON {"error": ...} for Starlette's own answers (404, 405) and for anything unexpected (500)."""

    @app.exception_handler(StarletteHTTPException)
    async def http_exception(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %r", request.method, request.url.path, exc)  # uvicorn logs the traceback
        return JSONResponse({"error": INTERNAL_ERROR}, status_code=500)

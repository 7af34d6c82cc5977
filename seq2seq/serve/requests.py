"""One request, from bytes to model input: read the body within its limit, parse and check it, encode it.

Everything here runs on the event loop's thread, before a request joins a batch, so a bad request is
answered with its own 4xx naming its own sentence and never reaches the model or another request's
batch. Encoding is sentencepiece only (no PyTorch: the model thread stays the only one computing with
it); even the largest request the default limits allow (64 sentences of 2000 characters) encodes in a
few milliseconds (benchmarks/results.md), which is why it needs no thread of its own. Its phrases (at
most 16 per sentence and 16 avoided, of 100 characters) add up to 81% more text to encode;
`python benchmarks/serve.py --encoding` measures the request with and without them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request

from seq2seq.errors import UserError, log_renamed_field
from seq2seq.inference.api import (
    FORMATS,
    SEGMENTS,
    Prepared,
    SearchOptions,
    TooLong,
    TranslationRequest,
    Translator,
    markup_setting,
)

log = logging.getLogger("seq2seq.serve")
CLIENT_CLOSED = 499  # nginx's code for "the client closed the connection": logged and counted, never sent
# What a request body may hold (the names of seq2seq.inference.settings), and the old names still taken.
FIELDS = (
    "texts", "beam_size", "nbest", "length_penalty", "confidence", "constraints", "avoid", "src_lang",
    "tgt_lang", "markup", "format", "segment",
)  # fmt: skip
RENAMED_FIELDS = {"text": "texts"}  # old -> new: accepted for one release, with a logged warning
MAX_PENALTY = 10.0  # a request's length_penalty (GNMT alpha); useful values lie within 0-3


@dataclass(frozen=True)
class Limits:
    """What one request may ask for."""

    max_sentences: int = 64
    max_chars: int = 2000
    max_beam_size: int = 16
    max_body_bytes: int = 1 << 20
    # A constrained search's cost per step grows with its phrases' number and faster than their length
    # (a phrase of a few thousand words holds the model thread for many seconds); a glossary term is a few
    # words.
    max_phrases: int = 16  # per sentence in "constraints", and in "avoid"
    max_phrase_chars: int = 100


class HTTPError(Exception):
    """An answer other than 200: its status, a one-line message for {"error": ...}, and headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def require_json(request: Request) -> None:
    """415 unless the body is declared JSON: a browser cannot send that cross-site without CORS asking
    the server first, so a hostile page cannot post a form to the model."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        shown = media_type or "none"
        raise HTTPError(415, f"POST /translate takes Content-Type: application/json, not {shown}")


async def read_limited(request: Request, max_bytes: int) -> bytes:
    """The request body, refused (413) once it is known to exceed `max_bytes`, before it is read whole."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise HTTPError(413, f"the body has {declared} bytes; the limit is {max_bytes}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise HTTPError(413, f"the body exceeds the limit of {max_bytes} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise HTTPError(CLIENT_CLOSED, "the client closed the connection while sending the body") from None
    return b"".join(chunks)


@dataclass(frozen=True)
class ParsedRequest:
    """What a request asks for, checked for types and limits."""

    texts: list[str]
    options: SearchOptions
    confidence: bool = False
    constraints: list[list[str]] | None = None  # per text, target phrases its translation must contain
    avoid: list[str] | None = None  # target phrases no translation may contain
    # a multilingual model's source / target language code: one for every text, or one per text (None: the
    # server's)
    src_lang: str | list[str | None] | None = None
    tgt_lang: str | list[str | None] | None = None
    markup: str | None = None  # "auto" | "true" | "false" (None: the server's)
    format: str = "text"  # "text": texts are sentences | "html" | "xliff" | "po": texts are whole files
    segment: str = "none"  # "sentences": each text split into sentences (seq2seq.inference.sentences)
    length_penalty: float | None = None  # the request's own (None: the model's, as in `options`)

    def options_for(self, translator: Translator) -> SearchOptions:
        """The request's search on `translator` (a server's other model): its settings, with the request's
        beam_size, nbest and length_penalty (the model's own tuned length_penalty when it gives none)."""
        penalty = translator.options.length_penalty if self.length_penalty is None else self.length_penalty
        return translator.options.replace(
            beam_size=self.options.beam_size, nbest=self.options.nbest, length_penalty=penalty
        )


def parse_request(body: bytes, limits: Limits, defaults: SearchOptions) -> ParsedRequest:
    """The request in a body (a "texts" string counts as a list of one), or HTTPError."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise HTTPError(400, f"the body is not valid JSON ({error.__class__.__name__})") from None
    except RecursionError:  # the parser recurses once per [ or {
        raise HTTPError(400, "the body is not valid JSON here: it is nested too deeply") from None
    if not isinstance(payload, dict):
        raise HTTPError(422, 'the body must be a JSON object like {"texts": ["..."]}')
    payload = _renamed(payload)
    texts = [payload["texts"]] if isinstance(payload.get("texts"), str) else payload.get("texts")
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise HTTPError(422, '"texts" must be a string or a list of strings')
    if not texts or len(texts) > limits.max_sentences:
        raise HTTPError(422, f'"texts" must hold 1 to {limits.max_sentences} sentences, got {len(texts)}')
    fmt = _format(payload)
    longest = max(range(len(texts)), key=lambda i: len(texts[i]))
    if fmt == "text" and len(texts[longest]) > limits.max_chars:  # a file's size: max_body_bytes
        raise HTTPError(
            413, f"sentence {longest} has {len(texts[longest])} characters; the limit is {limits.max_chars}"
        )
    for index, text in enumerate(texts):
        _check_unicode(f"sentence {index}", text)
    confidence = payload.get("confidence", False)
    if not isinstance(confidence, bool):
        raise HTTPError(422, f'"confidence" must be true or false, got {json.dumps(confidence)}')
    constraints, avoid = _terms(payload, len(texts), limits)
    options = _options(payload, limits, defaults)
    if fmt != "text" and (confidence or constraints or avoid or options.nbest > 1):
        raise HTTPError(422, f'"format": "{fmt}" answers with the translated files; "confidence", '
                        '"constraints", "avoid" and "nbest" need "format": "text"')  # fmt: skip
    return ParsedRequest(
        texts,
        options,
        confidence,
        constraints,
        avoid,
        *_languages(payload, len(texts)),
        _markup(payload),
        fmt,
        _segment(payload),
        None if payload.get("length_penalty") is None else options.length_penalty,
    )


def _segment(payload: dict[str, Any]) -> str:
    """ "segment": "none" (absent too) or "sentences"."""
    value = payload.get("segment", "none")
    if value not in SEGMENTS:
        raise HTTPError(422, f'"segment" must be "none" or "sentences", got {json.dumps(value)}')
    return str(value)


def _format(payload: dict[str, Any]) -> str:
    """ "format": "text" (absent too), "html", "xliff" or "po"."""
    value = payload.get("format", "text")
    if value not in FORMATS:
        shown = ", ".join(f'"{name}"' for name in FORMATS)
        raise HTTPError(422, f'"format" must be one of {shown}, got {json.dumps(value)}')
    return str(value)


def _markup(payload: dict[str, Any]) -> str | None:
    """ "markup": "auto", "true" or "false" (JSON true / false too), or null / absent for the server's."""
    value = payload.get("markup")
    if value is None:
        return None
    try:
        return markup_setting(value)
    except UserError:
        raise HTTPError(422, f'"markup" must be "auto", "true" or "false", got {json.dumps(value)}') from None


def _languages(payload: dict[str, Any], count: int) -> tuple[Any, Any]:
    """ "src_lang" and "tgt_lang": a language code each, or a list of one code (or null) per text, or
    null / absent for the server's."""
    codes = payload.get("src_lang"), payload.get("tgt_lang")
    for name, code in zip(("src_lang", "tgt_lang"), codes):
        values = code if isinstance(code, list) else [code]
        if isinstance(code, list) and len(code) != count:
            raise HTTPError(
                422, f'"{name}" has {len(code)} codes for {count} texts; give one code, or one per text'
            )
        if any(value is not None and (not isinstance(value, str) or not value) for value in values):
            raise HTTPError(422, f'"{name}" must be a language code of the model, got {json.dumps(code)}')
    return codes


def _renamed(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload under the current field names: an old one (RENAMED_FIELDS) is taken with a logged
    warning; an unknown field, or an old one beside its new name, is a 422."""
    unknown = sorted(set(payload) - set(FIELDS) - set(RENAMED_FIELDS))
    if unknown:
        raise HTTPError(422, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}")
    renamed = dict(payload)
    for old, new in RENAMED_FIELDS.items():
        if old not in payload:
            continue
        if new in payload:
            raise HTTPError(422, f'give "{new}" only ("{old}" is its deprecated old name)')
        log_renamed_field(f'the request field "{old}"', f'"{new}"', logger=log)
        renamed[new] = renamed.pop(old)
    return renamed


def _terms(
    payload: dict[str, Any], count: int, limits: Limits
) -> tuple[list[list[str]] | None, list[str] | None]:
    """ "constraints" (one list of phrases per text) and "avoid" (a list of phrases), checked for shape,
    limits and Unicode."""
    constraints, avoid = payload.get("constraints"), payload.get("avoid")
    if constraints is not None:
        if not isinstance(constraints, list) or len(constraints) != count:
            raise HTTPError(422, f'"constraints" must hold one list of phrases per sentence ({count})')
        for index, phrases in enumerate(constraints):
            if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
                raise HTTPError(422, f'"constraints" of sentence {index} must be a list of strings')
            where = f'"constraints" of sentence {index}'
            _check_phrases(phrases, limits, where=where, phrase=f"{where}: phrase")
    if avoid is not None:
        if not isinstance(avoid, list) or not all(isinstance(p, str) for p in avoid):
            raise HTTPError(422, '"avoid" must be a list of strings')
        _check_phrases(avoid, limits, where='"avoid"', phrase='"avoid" phrase')
    return constraints, avoid


def _check_phrases(phrases: list[str], limits: Limits, *, where: str, phrase: str) -> None:
    """At most max_phrases phrases of at most max_phrase_chars characters, each valid Unicode; errors
    name the list (`where`) or the phrase (`phrase` and its index)."""
    if len(phrases) > limits.max_phrases:
        raise HTTPError(
            422, f"{where} has {len(phrases)} phrases; the limit is max_phrases={limits.max_phrases}"
        )
    for number, text in enumerate(phrases):
        if len(text) > limits.max_phrase_chars:
            raise HTTPError(413, f"{phrase} {number} has {len(text)} characters; the limit is "
                                 f"max_phrase_chars={limits.max_phrase_chars}")  # fmt: skip
        _check_unicode(f"{phrase} {number}", text)


def _check_unicode(named: str, text: str) -> None:
    """JSON may spell a lone UTF-16 surrogate ("\\ud800"), which is no character: the tokenizer fails
    on it (sentencepiece with a RuntimeError). `named`: "sentence 3", or a phrase."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise HTTPError(
            422, f"{named} is not valid Unicode: a lone surrogate at character {error.start}"
        ) from None


def _options(payload: dict[str, Any], limits: Limits, defaults: SearchOptions) -> SearchOptions:
    """The request's search: the server's (its settings over the model's own tuned values), with the
    request's beam_size, nbest and length_penalty when it gives them."""
    beam_size, nbest = payload.get("beam_size", defaults.beam_size), payload.get("nbest", 1)
    for name, value in (("beam_size", beam_size), ("nbest", nbest)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise HTTPError(422, f'"{name}" must be an integer, got {json.dumps(value)}')
    if not 1 <= beam_size <= limits.max_beam_size:
        raise HTTPError(422, f'"beam_size" must be between 1 and {limits.max_beam_size}, got {beam_size}')
    if not 1 <= nbest <= beam_size:
        raise HTTPError(422, f'"nbest" must be between 1 and beam_size ({beam_size}), got {nbest}')
    penalty = payload.get("length_penalty", defaults.length_penalty)
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not 0 <= penalty <= MAX_PENALTY:
        raise HTTPError(
            422, f'"length_penalty" must be a number from 0 to {MAX_PENALTY:g}, got {json.dumps(penalty)}'
        )
    return defaults.replace(beam_size=beam_size, nbest=nbest, length_penalty=float(penalty))


def prepare_request(
    translator: Translator, parsed: ParsedRequest, markup: str | None = None,
    indices: Sequence[int] | None = None,
) -> Prepared:  # fmt: skip
    """The request's model input (seq2seq.inference.prepared, the pipeline's first step), or the 4xx
    that names its sentence: 413 for one over the token limit under long_lines=error, 422 for a language
    the model lacks, a phrase that cannot be met, or a text or phrase the tokenizer rejects. `markup`:
    for this call (None: the request's, else the server's); `indices`: the texts' numbers in the whole
    request, for the errors (when `parsed` holds some of its texts)."""
    number = (lambda index: index) if indices is None else indices.__getitem__
    request = TranslationRequest.of(
        parsed.texts, src_lang=parsed.src_lang, tgt_lang=parsed.tgt_lang, constraints=parsed.constraints,
        avoid=parsed.avoid, options=parsed.options, confidence=parsed.confidence,
        markup=parsed.markup if markup is None else markup,
        segment=parsed.segment,
    )  # fmt: skip
    try:
        return translator.prepare(
            request,
            label=lambda index: f"sentence {number(index)}",
            constraint_label=lambda index: f"the constraints of sentence {number(index)}",
        )
    except TooLong as error:
        raise HTTPError(413, f"sentence {number(error.index)} has {error.tokens} tokens; the limit is "
                             f"{translator.max_input_tokens} (this server refuses longer sentences: "
                             "long_lines=error)") from None  # fmt: skip
    except UserError as error:
        raise HTTPError(422, str(error)) from None
    except Exception as error:  # the tokenizer's own failures are about the text it was given
        raise _untokenizable(translator, request, error, number) from None


def _untokenizable(
    translator: Translator, request: TranslationRequest, error: Exception, number: Any = lambda i: i
) -> HTTPError:
    """The 422 for a request the tokenizer fails on (sentencepiece raises RuntimeError), naming the first
    sentence that fails alone, else the phrases."""
    for index, text in enumerate(request.texts):
        try:
            translator.prepare(
                dataclasses.replace(request, texts=(dataclasses.replace(text, constraints=None),), avoid=None)
            )
        except Exception:
            log.warning("sentence %d of a request cannot be tokenized: %r", number(index), error)
            return HTTPError(
                422, f"sentence {number(index)} cannot be tokenized ({error.__class__.__name__})"
            )
    log.warning("the phrases of a request cannot be tokenized: %r", error)
    return HTTPError(
        422, f'a phrase of "constraints" or "avoid" cannot be tokenized ({error.__class__.__name__})'
    )

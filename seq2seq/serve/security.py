"""What a server on a network needs before anyone else can reach it: an API key, CORS, a loud default.

- `api_key`: POST /translate, GET /stats and GET /metrics need `Authorization: Bearer <key>` (401
  otherwise); GET /health and the page stay open for load balancers and browsers (the page asks for
  the key and sends it). The key is compared in constant time.
- CORS: no origin may call the API from a browser page of another site unless `cors_origins` names it
  (Starlette's CORSMiddleware answers the preflight). POST /translate also insists on
  `Content-Type: application/json` (requests.py), which a cross-site form cannot send.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request

from seq2seq.serve.requests import HTTPError


def check_api_key(request: Request, api_key: str | None) -> None:
    """401 unless the request carries `Authorization: Bearer <api_key>` (nothing to check without a key)."""
    if api_key is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), api_key.encode()):
        message = "this server needs an API key: send Authorization: Bearer <key>"
        raise HTTPError(401, message, {"WWW-Authenticate": "Bearer"})


def allow_origins(app: FastAPI, origins: list[str]) -> None:
    """Let browser pages from `origins` call the API (none by default: the browser's same-origin rule)."""
    if origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"], max_age=600,
        )  # fmt: skip


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach `host` (a name other than localhost counts as reachable)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, api_key: Any) -> str | None:
    """The startup warning for a server anyone on the network may use, or None."""
    if api_key is not None or is_loopback(host):
        return None
    return (
        f"listening on {host} without an API key: anyone who can reach this port can use the model; "
        "set api_key_env=NAME (an environment variable holding the key) or host=127.0.0.1"
    )

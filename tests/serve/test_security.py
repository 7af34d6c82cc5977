"""A real seq2seq-serve with an API key (from an environment variable) and one allowed web origin: the
key is required where it should be, only JSON is accepted, CORS answers only the named origin, and a
server reachable from the network without a key says so when it starts."""

from __future__ import annotations

import httpx
import pytest

KEY = "k3y-for-tests-0123456789"
ORIGIN = "https://app.example"


def preflight(url: str, origin: str) -> httpx.Response:
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type"}  # fmt: skip
    return httpx.options(f"{url}/translate", headers=headers)


@pytest.mark.slow
def test_the_api_key_is_required_and_only_json_is_accepted(start_server):
    server = start_server("api_key_env=SEQ2SEQ_TEST_KEY", f"cors_origins=[{ORIGIN}]", "host=0.0.0.0",
                          env={"SEQ2SEQ_TEST_KEY": KEY})  # fmt: skip
    url, good = f"{server.url}/translate", {"Authorization": f"Bearer {KEY}"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
        response = httpx.post(url, json={"texts": "in the beginning"}, headers=headers)
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in response.json()["error"]
    assert httpx.post(url, json={"texts": "in the beginning"}, headers=good).status_code == 200
    for path in ("/stats", "/metrics"):
        assert httpx.get(f"{server.url}{path}").status_code == 401
        assert httpx.get(f"{server.url}{path}", headers=good).status_code == 200
    health = httpx.get(f"{server.url}/health")  # open to load balancers; the page learns it needs a key
    assert health.status_code == 200 and health.json()["api_key_required"] is True
    form = httpx.post(url, data={"texts": "in the beginning"}, headers=good)  # what a cross-site form sends
    assert form.status_code == 415 and "Content-Type: application/json" in form.json()["error"]
    plain = httpx.post(url, content=b'{"texts": "a"}', headers={**good, "Content-Type": "text/plain"})
    assert plain.status_code == 415

    allowed = preflight(server.url, ORIGIN)
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    other = preflight(server.url, "https://evil.example")
    assert "access-control-allow-origin" not in other.headers
    answer = httpx.post(url, json={"texts": "god"}, headers={**good, "Origin": ORIGIN})
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert "without an API key" not in server.output()


@pytest.mark.slow
def test_no_cross_site_access_by_default_and_a_warning_on_a_network_address(start_server):
    server = start_server("host=0.0.0.0")
    response = preflight(server.url, ORIGIN)
    assert "access-control-allow-origin" not in response.headers
    answer = httpx.post(f"{server.url}/translate", json={"texts": "god"}, headers={"Origin": ORIGIN})
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers
    assert "listening on 0.0.0.0 without an API key" in server.output()
    assert httpx.get(f"{server.url}/health").json()["api_key_required"] is False

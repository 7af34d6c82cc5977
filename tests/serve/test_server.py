"""seq2seq-serve as a real server on 127.0.0.1 with a real HTTP client: answers equal seq2seq-translate's,
concurrent clients are batched together and each gets its own answer, bad requests get 4xx JSON,
SIGTERM lets in-flight requests finish, and the page works in a real browser."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from tiny_models import sentences

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions

OPTIONS = SearchOptions(beam_size=5, max_len_a=0.0, max_len_b=12)
JSON = {"Content-Type": "application/json"}


def cli_translations(checkpoint: Path, lines: list[str], tmp_path: Path, *overrides: str) -> list[str]:
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    command = [sys.executable, "-m", "seq2seq.cli.translate", f"checkpoint={checkpoint}", f"input={source}",
               f"output={output}", "decode.max_len_a=0", "decode.max_len_b=12", *overrides]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    return output.read_text(encoding="utf-8").split("\n")[:-1]


@pytest.mark.slow
def test_answers_equal_seq2seq_translate(start_server, checkpoint, tmp_path):
    server = start_server()
    lines = sentences(6, seed=1)
    answer = httpx.post(f"{server.url}/translate", json={"texts": lines}, timeout=60).json()
    assert answer["translations"] == cli_translations(checkpoint, lines, tmp_path)
    assert answer["model"] == "model.pt" and answer["milliseconds"] > 0
    single = httpx.post(
        f"{server.url}/translate", json={"texts": lines[0], "beam_size": 1}, timeout=60
    ).json()
    assert single["translations"] == cli_translations(checkpoint, lines[:1], tmp_path, "decode=greedy")
    nbest = httpx.post(f"{server.url}/translate", json={"texts": lines[:2], "nbest": 3}, timeout=60).json()
    assert [len(row) for row in nbest["translations"]] == [3, 3] and list(nbest["translations"][0][0]) == [
        "text", "score", "translation"
    ]  # fmt: skip
    assert nbest["scores"] == [[record["score"] for record in row] for row in nbest["translations"]]
    health = httpx.get(f"{server.url}/health").json()
    assert health == {"status": "ok", "model": "model.pt", "step": 3, "engine": "torch",
                      "src_lang": "en", "tgt_lang": "xx", "api_key_required": False,
                      "models": [{"name": "model.pt", "engine": "torch", "step": 3, "healthy": True,
                                  "src_langs": ["en"], "tgt_langs": ["xx"]}],
                      "source_language": "en", "target_language": "xx"}  # the old names, for one release  # fmt: skip


@pytest.mark.slow
def test_concurrent_clients_are_batched_and_each_gets_its_own_answer(start_server, checkpoint):
    server = start_server("batch_wait_ms=20")
    clients, per_client = 32, 20
    texts = sentences(clients * per_client, seed=2)
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    expected = [
        ([t.text for t in best.nbest], [round(t.score, 4) for t in best.nbest])
        for best in translator.translate(texts, beam_size=2, nbest=2)
    ]
    # A random model repeats few words, but its scores differ for every input: answers tell requests apart.
    assert len({tuple(scores) for _, scores in expected}) > 0.95 * len(set(texts))

    def client(number: int) -> list[tuple[int, tuple]]:
        got = []
        with httpx.Client(timeout=120) as http:
            for k in range(number * per_client, (number + 1) * per_client):
                request = {"texts": [texts[k]], "beam_size": 2, "nbest": 2}
                response = http.post(f"{server.url}/translate", json=request)
                assert response.status_code == 200, response.text
                answer = response.json()
                records = answer["translations"][0]
                got.append((k, ([r["translation"] for r in records], [r["score"] for r in records])))
        return got

    with ThreadPoolExecutor(clients) as pool:
        answers = [pair for batch in pool.map(client, range(clients)) for pair in batch]
    assert len(answers) == clients * per_client
    for k, (translations, scores) in answers:  # scores agree to float noise across batch compositions
        assert translations == expected[k][0] and scores == pytest.approx(expected[k][1], abs=2e-4)
    stats = httpx.get(f"{server.url}/stats").json()
    assert stats["requests"] == clients * per_client and stats["largest_batch_requests"] > 1
    assert stats["batches"] < stats["requests"]


BAD_REQUESTS = [
    (b"{not json", 400, "not valid JSON"),
    (json.dumps(["text"]).encode(), 422, "must be a JSON object"),
    (json.dumps({"texts": 5}).encode(), 422, '"texts" must be a string or a list of strings'),
    (json.dumps({"texts": ["ok", 3]}).encode(), 422, '"texts" must be a string or a list of strings'),
    (json.dumps({"texts": "ok", "speed": "fast"}).encode(), 422, "unknown field(s) speed"),
    (json.dumps({"texts": []}).encode(), 422, "must hold 1 to 4 sentences, got 0"),
    (json.dumps({"texts": ["a"] * 5}).encode(), 422, "must hold 1 to 4 sentences, got 5"),
    (json.dumps({"texts": ["a", "b" * 101]}).encode(), 413, "sentence 1 has 101 characters; the limit"),
    (json.dumps({"texts": "a", "beam_size": 0}).encode(), 422, '"beam_size" must be between 1 and 8, got 0'),
    (json.dumps({"texts": "a", "beam_size": 9}).encode(), 422, '"beam_size" must be between 1 and 8, got 9'),
    (json.dumps({"texts": "a", "beam_size": "5"}).encode(), 422, '"beam_size" must be an integer, got "5"'),
    (json.dumps({"texts": "a", "beam_size": 2, "nbest": 3}).encode(), 422, '"nbest" must be between 1 and'),
    (json.dumps({"texts": "a" * 3000}).encode(), 413, "the body has"),
    (json.dumps({"texts": "a", "avoid": ["x", "y", "z"]}).encode(), 422,
     '"avoid" has 3 phrases; the limit is max_phrases=2'),
    (json.dumps({"texts": "a", "constraints": [["heaven and earth"]]}).encode(), 413,
     '"constraints" of sentence 0: phrase 0 has 16 characters; the limit is max_phrase_chars=10'),
    (b'{"texts": "a", "avoid": ["\\ud800"]}', 422, '"avoid" phrase 0 is not valid Unicode'),
]  # fmt: skip


@pytest.mark.slow
def test_each_bad_request_gets_its_status_and_message(start_server):
    server = start_server("max_sentences=4", "max_chars=100", "max_beam_size=8", "max_body_bytes=2000",
                          "max_phrases=2", "max_phrase_chars=10")  # fmt: skip
    for body, status, message in BAD_REQUESTS:
        response = httpx.post(f"{server.url}/translate", content=body, headers=JSON)
        assert response.status_code == status, (body, response.text)
        assert message in response.json()["error"]

    def chunked():  # no Content-Length: refused while streaming
        for _ in range(10):
            yield b" " * 500

    response = httpx.post(f"{server.url}/translate", content=chunked(), headers=JSON)
    assert response.status_code == 413 and "exceeds the limit of 2000 bytes" in response.json()["error"]
    assert httpx.get(f"{server.url}/health").json()["status"] == "ok"
    assert httpx.post(f"{server.url}/translate", json={"texts": "in the beginning"}).status_code == 200


@pytest.mark.slow
def test_sigterm_lets_requests_in_flight_finish_then_exits_zero(start_server):
    server = start_server("batch_wait_ms=1500")  # requests wait in the batcher long enough to be in flight
    results: list[int] = []

    def request(text: str) -> None:
        results.append(httpx.post(f"{server.url}/translate", json={"texts": text}, timeout=60).status_code)

    threads = [threading.Thread(target=request, args=(text,)) for text in sentences(4, seed=3)]
    for thread in threads:
        thread.start()
    threading.Event().wait(0.5)
    server.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join()
    assert results == [200, 200, 200, 200]
    assert server.process.wait(timeout=60) == 0
    with pytest.raises(httpx.TransportError):  # new connections are refused
        httpx.get(f"{server.url}/health", timeout=2)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (installed by .ci/run)")
def test_the_page_translates_in_a_real_browser(start_server, checkpoint, tmp_path):
    server = start_server()
    text = sentences(1, seed=4)[0]
    expected = Translator.from_checkpoint(checkpoint, options=OPTIONS).translate([text])[0].text
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=15000"]  # fmt: skip
    url = str(httpx.URL(f"{server.url}/", params={"q": text}))
    dom = subprocess.run(["chromium", *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert 'data-done="true"' in dom.stdout and expected in dom.stdout, dom.stderr[-2000:]
    screenshot = tmp_path / "page.png"
    subprocess.run(["chromium", *flags, f"--screenshot={screenshot}", "--window-size=900,600", url],
                   capture_output=True, timeout=120, check=False)  # fmt: skip
    assert screenshot.stat().st_size > 5000

"""A server process on a free loopback port, over a random model whose outputs differ for every input."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.model import build_model

httpx = pytest.importorskip("httpx", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install '.[serve]'")

WORDS = "in the beginning god created heaven and earth light was good day night water land".split()


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 9))) for _ in range(count)]


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random model with sharp output weights: its translation tells apart almost any two inputs."""
    tokenizer = Tokenizer.train(sentences(400, 0), vocab_size=64, model_type="bpe")
    torch.manual_seed(0)
    size = tokenizer.vocab_size
    model = build_model(src_vocab_size=size, tgt_vocab_size=size, d_model=32, n_heads=4, ffn_dim=64,
                        encoder_layers=1, decoder_layers=1, dropout=0.0, max_positions=128)  # fmt: skip
    with torch.no_grad():
        model.output.weight.mul_(4.0)
    path = tmp_path_factory.mktemp("model") / "model.pt"
    payload = {"model": model.state_dict(), "model_config": model.config, "step": 3,
               "tokenizer": {"src": tokenizer.to_bytes(), "tgt": None},
               "config": {"data": {"src_lang": "en", "tgt_lang": "xx"}}}  # fmt: skip
    save_checkpoint(path, payload)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, checkpoint: Path, *overrides: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "seq2seq.cli.serve", f"checkpoint={checkpoint}", f"port={self.port}",
                   "threads=1", "decode.max_len_a=0", "decode.max_len_b=12", *overrides]  # fmt: skip
        env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
            if self.process.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"the server did not start:\n{self.output()}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=60)

    def output(self) -> str:
        return self.process.stdout.read() if self.process.stdout else ""


@pytest.fixture
def start_server(checkpoint: Path) -> Iterator:
    servers: list[Server] = []

    def start(*overrides: str) -> Server:
        servers.append(Server(checkpoint, *overrides))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()

"""A server process on a free loopback port, over a random model whose outputs differ for every input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

pytest.importorskip("httpx", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("prometheus_client", reason="needs the serve extra: pip install '.[serve]'")

from serving import Server, sentences

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.model import build_model


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


@pytest.fixture
def start_server(checkpoint: Path) -> Iterator:
    servers: list[Server] = []

    def start(*overrides: str, **options) -> Server:
        servers.append(Server(checkpoint, *overrides, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()

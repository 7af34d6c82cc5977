"""A server process on a free loopback port, over a random model whose outputs differ for every input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("fastapi", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install '.[serve]'")
pytest.importorskip("prometheus_client", reason="needs the serve extra: pip install '.[serve]'")

from serving import Server
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random model with sharp output weights: its translation tells apart almost any two inputs."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, max_positions=128, sharpness=4.0)
    path = tmp_path_factory.mktemp("model") / "model.pt"
    return save_tiny_checkpoint(
        path, model, tokenizer, step=3, config={"data": {"src_lang": "en", "tgt_lang": "xx"}}
    )


@pytest.fixture
def start_server(checkpoint: Path) -> Iterator:
    servers: list[Server] = []

    def start(*overrides: str, **options) -> Server:
        servers.append(Server(checkpoint, *overrides, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()

"""A test module's tiny model checkpoint and the Translator over it, as two module-scoped fixtures made
from the module's settings (a module binds them with `checkpoint, translator = tiny_translator_fixtures(...)`,
and its tests take `checkpoint` and `translator` as they take any fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tiny_models import tiny_model_checkpoint

from seq2seq import Translator


def tiny_translator_fixtures(options: Any, *, step: int, **settings: Any) -> tuple[Any, Any]:
    """The fixtures `checkpoint` (the file tiny_model_checkpoint(step=step, **settings) writes) and
    `translator` (Translator.from_checkpoint of it with `options`), each made once per module."""

    @pytest.fixture(scope="module")
    def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return tiny_model_checkpoint(tmp_path_factory.mktemp("model"), step=step, **settings)

    @pytest.fixture(scope="module")
    def translator(checkpoint: Path) -> Translator:
        return Translator.from_checkpoint(checkpoint, options=options)

    return checkpoint, translator

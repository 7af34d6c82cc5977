"""One way from a command's config to a Translator (seq2seq.cli.config.translator_config): seq2seq-translate,
seq2seq-serve, seq2seq-backtranslate and seq2seq-qe-data read the same keys the same way; a key a
command's config lacks takes the Translator's default."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq.cli.config.launch import config_dir
from seq2seq.cli.config.translator_config import checkpoint_paths, rerank_weight, translator_from_config
from seq2seq.errors import UserError


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, max_positions=128)
    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "model.pt", model, tokenizer, step=3)


def composed(command: str, *overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(command, overrides=list(overrides))


@pytest.mark.parametrize("command", ["translate", "serve", "backtranslate"])
def test_every_command_reads_the_same_keys(checkpoint: Path, command: str) -> None:
    cfg = composed(command, f"checkpoint={checkpoint}", "decode=greedy", "decode.max_len_b=7",
                   "max_input_tokens=20", "long_lines=split")  # fmt: skip
    translator = translator_from_config(cfg)
    assert (translator.options.beam_size, translator.options.max_len_b) == (1, 7)
    assert (translator.max_input_tokens, translator.long_lines) == (20, "split")
    assert translator.engine.name == "torch" and translator.step == 3


def test_a_command_without_the_keys_takes_the_defaults(checkpoint: Path) -> None:
    cfg = composed("qe_data", "device=cpu")
    translator = translator_from_config(cfg, checkpoint=checkpoint)
    assert translator.max_input_tokens == 127 and translator.long_lines == "truncate"
    assert translator.quality is None


def test_checkpoint_paths_and_rerank_weight(tmp_path: Path) -> None:
    cfg = composed("translate", "checkpoint=[a.pt,b.pt]")
    assert [Path(path).name for path in checkpoint_paths(cfg.checkpoint)] == ["a.pt", "b.pt"]
    assert rerank_weight(cfg) is None
    with pytest.raises(UserError, match="rerank=qe needs a QE model: pass qe_checkpoint="):
        rerank_weight(composed("translate", "checkpoint=a.pt", "rerank=qe"))

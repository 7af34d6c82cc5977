"""init_from=: a QE model starts from a translation model's encoder and embeddings, weight for weight;
a translation model that does not fit it is a one-line error, learned positions of another length
included."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tiny_models import TINY, save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq.errors import UserError
from seq2seq.model import build_encoder_only
from seq2seq.qe.warm_start import warm_start


def qe_model(vocab: int, pad_id: int, **overrides: object) -> torch.nn.Module:
    """An encoder-only model with the tiny translation model's encoder shape."""
    torch.manual_seed(5)
    shape = {key: TINY[key] for key in ("d_model", "n_heads", "ffn_dim")}
    arguments = {**shape, "layers": TINY["encoder_layers"], "dropout": 0.0, **overrides}
    return build_encoder_only(src_vocab_size=vocab, tgt_vocab_size=vocab, pad_id=pad_id, **arguments)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_the_encoder_and_both_embeddings_are_copied(tmp_path: Path, positional: str) -> None:
    tokenizer = tiny_tokenizer()
    vocab = tokenizer.vocab_size
    translation = tiny_model(vocab, positional=positional, max_positions=64)
    path = save_tiny_checkpoint(tmp_path / "mt.pt", translation, tokenizer, step=1)
    length = 64 if positional == "learned" else 96  # only learned positions must have the same length
    qe = qe_model(vocab, tokenizer.pad_id, positional=positional, max_positions=length)
    warm_start(qe, path)
    ours, theirs = qe.state_dict(), translation.state_dict()
    table = ours["encoder.embedding.weight"]  # (src V + tgt V, D)
    assert torch.equal(table[:vocab], theirs["encoder.embedding.weight"])
    assert torch.equal(table[vocab:], theirs["decoder.embedding.weight"])
    shared = [name for name in ours if name.startswith("encoder.") and name != "encoder.embedding.weight"]
    assert shared and all(torch.equal(ours[name], theirs[name]) for name in shared)
    assert any("position" in name for name in shared) == (positional == "learned")


def test_learned_positions_of_another_length_are_a_one_line_error(tmp_path: Path) -> None:
    """Item: the position tables' sizes differed, and copying them was a RuntimeError about tensor sizes."""
    tokenizer = tiny_tokenizer()
    translation = tiny_model(tokenizer.vocab_size, positional="learned", max_positions=64)
    path = save_tiny_checkpoint(tmp_path / "mt.pt", translation, tokenizer, step=1)
    qe = qe_model(tokenizer.vocab_size, tokenizer.pad_id, positional="learned", max_positions=128)
    with pytest.raises(UserError, match=r"max_positions=128 vs 64.*set model\.\* to") as error:
        warm_start(qe, path)
    assert "\n" not in str(error.value)

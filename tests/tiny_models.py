"""The model tests build: configs/model/tiny.yaml's sizes, read with model_size("tiny"), so that no test
keeps a copy of the numbers (configs/model/decoder_only_tiny.yaml's for the decoder-only family);
random weights, dropout off, eval mode. Also the small world such a model translates in (sentences over
a few words, a sentencepiece model of them) and its checkpoint file."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.ensemble import Ensemble
from seq2seq.model import DecoderOnly, Seq2Seq, build_decoder_only, build_model, model_size

TINY = model_size("tiny")  # d_model, n_heads, ffn_dim, encoder_layers, decoder_layers
TINY_DECODER_ONLY = model_size("decoder_only_tiny")  # d_model, n_heads, ffn_dim, layers
WORDS = "in the beginning god created heaven and earth light was good day night water land".split()


def tiny_model(
    vocab: int, *, seed: int = 0, pad_id: int = 0, sharpness: float = 1.0, **overrides: Any
) -> Seq2Seq:
    """A random tiny model over `vocab` tokens (both sides); `overrides` are other build_model arguments.

    `sharpness` scales the output weights (and the embedding tied to them), so that the model's choices
    are clear-cut rather than near-ties: what search and serving tests need to tell outputs apart.
    """
    torch.manual_seed(seed)
    arguments = {**TINY, "dropout": 0.0, **overrides}
    model = build_model(src_vocab_size=vocab, tgt_vocab_size=vocab, pad_id=pad_id, **arguments)
    return _sharpened(model, sharpness).eval()


def tiny_decoder_only(
    vocab: int, *, seed: int = 0, pad_id: int = 0, sharpness: float = 1.0, **overrides: Any
) -> DecoderOnly:
    """`tiny_model`'s decoder-only counterpart (model=decoder_only_tiny's sizes); `overrides` are other
    build_decoder_only arguments (prefix_lm=True: the prefix LM)."""
    torch.manual_seed(seed)
    arguments = {**TINY_DECODER_ONLY, "dropout": 0.0, **overrides}
    model = build_decoder_only(src_vocab_size=vocab, tgt_vocab_size=vocab, pad_id=pad_id, **arguments)
    return _sharpened(model, sharpness).eval()


def flat_model(kind: str, vocab: int) -> nn.Module:
    """A random tiny model of `kind` (encoder_decoder, decoder_only or an ensemble of two encoder-decoders)
    with flat distributions over `vocab` tokens: any change to a row's candidates would change a score."""
    if kind == "decoder_only":
        return tiny_decoder_only(vocab, seed=2, max_positions=64)
    model = tiny_model(vocab, seed=2, max_positions=64)
    if kind == "ensemble":
        return Ensemble([model, tiny_model(vocab, seed=3, max_positions=64)]).eval()
    return model


def _sharpened(model: nn.Module, sharpness: float) -> nn.Module:
    if sharpness != 1.0:
        with torch.no_grad():
            model.output.weight.mul_(sharpness)
    return model


def sentences(count: int, seed: int, *, words: tuple[int, int] = (2, 9)) -> list[str]:
    """`count` random sentences of WORDS, each of words[0] to words[1] words."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(*words))) for _ in range(count)]


def tiny_tokenizer() -> Tokenizer:
    """A 64-piece BPE model of 400 such sentences (one model for both sides)."""
    return Tokenizer.train(sentences(400, 0), vocab_size=64, model_type="bpe")


def save_tiny_checkpoint(
    path: Path, model: nn.Module, tokenizer: Tokenizer, *, step: int, **extra: Any
) -> Path:
    """A checkpoint file as training writes one: weights, model_config, step, the joint tokenizer, `extra`."""
    payload = {
        "model": model.state_dict(),
        "model_config": model.config,
        "step": step,
        "tokenizer": {"src": tokenizer.to_bytes(), "tgt": None},
        **extra,
    }
    save_checkpoint(path, payload)
    return path


def tiny_model_checkpoint(directory: Path, *, step: int, **settings: Any) -> Path:
    """directory/model.pt, a checkpoint file of tiny_model(vocab, **settings) over tiny_tokenizer()'s
    vocabulary."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, **settings)
    return save_tiny_checkpoint(directory / "model.pt", model, tokenizer, step=step)


def tiny_checkpoints(
    directory: Path, models: dict[str, Callable[[int], nn.Module]], *, step: int | None = None, **extra: Any
) -> dict[str, Path]:
    """name -> directory/name.pt, a checkpoint file of the model `models[name](vocab)` builds over
    tiny_tokenizer()'s vocabulary (all built first, in order): all at `step`, or (step None) at updates 1,
    2, ... in their order, as a run's numbered checkpoints; `extra` as for save_tiny_checkpoint."""
    tokenizer = tiny_tokenizer()
    built = {name: build(tokenizer.vocab_size) for name, build in models.items()}
    steps = itertools.count(1) if step is None else itertools.repeat(step)
    return {
        name: save_tiny_checkpoint(directory / f"{name}.pt", model, tokenizer, step=at, **extra)
        for (name, model), at in zip(built.items(), steps)
    }


# For tiny_checkpoints: a causal model and a prefix LM (seeds 0 and 1), clear-cut choices, 128 positions.
SHARP_DECODER_ONLY_PAIR = {
    "causal": partial(tiny_decoder_only, sharpness=4.0, max_positions=128),
    "prefix_lm": partial(tiny_decoder_only, seed=1, prefix_lm=True, sharpness=4.0, max_positions=128),
}

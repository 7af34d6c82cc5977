"""A checkpoint whose best outputs depend on the length penalty, with or without stored decoding settings.

A random model whose final-norm bias is pushed along the eos output row: eos is about as likely as the
best word, so a search with length_penalty=1.0 stops at once (empty outputs) and one with 3.0 writes words.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import torch

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.model import build_model

WORDS = "in the beginning god created heaven and earth light was good day night water land".split()
EOS_PUSH = 18.0  # found by trying: 17 leaves most outputs alike at 1.0 and 3.0, 19 empties them at both
TUNED = {  # the record training stores (seq2seq.train.decoding_tuning), as a test would read it back
    "values": {"length_penalty": 3.0, "max_len_a": 0.5},
    "defaults": {"length_penalty": 1.0, "max_len_a": 1.2},
    "chosen": True,
    "bleu": 22.4,
    "default_bleu": 20.5,
    "sentences": 500,
    "beam_size": 5,
}


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 9))) for _ in range(count)]


def write_checkpoint(path: Path, decoding: dict[str, Any] | None = TUNED) -> Path:
    tokenizer = Tokenizer.train(sentences(400, 0), vocab_size=64, model_type="bpe")
    torch.manual_seed(0)
    size = tokenizer.vocab_size
    model = build_model(src_vocab_size=size, tgt_vocab_size=size, d_model=32, n_heads=4, ffn_dim=64,
                        encoder_layers=1, decoder_layers=1, dropout=0.0, max_positions=128)  # fmt: skip
    state = model.state_dict()
    with torch.no_grad():
        state["output.weight"].mul_(4.0)
        eos = state["output.weight"][tokenizer.eos_id]
        state["decoder.final_norm.bias"].add_(EOS_PUSH * eos / eos.norm() ** 2)
    payload = {"model": state, "model_config": model.config, "step": 3,
               "tokenizer": {"src": tokenizer.to_bytes(), "tgt": None},
               "config": {"data": {"src_lang": "en", "tgt_lang": "xx"}}}  # fmt: skip
    if decoding is not None:
        payload["decoding"] = decoding
    save_checkpoint(path, payload)
    return path

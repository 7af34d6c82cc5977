"""A checkpoint whose best outputs depend on the length penalty, with or without stored decoding settings.

The server tests' random model (tiny_models) with its final-norm bias pushed along the eos output row: eos
is about as likely as the best word, so a search with length_penalty=1.0 stops at once (empty outputs) and
one with 3.0 writes words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

EOS_PUSH = 21.0  # found by trying: below 20.5 some outputs at 1.0 keep words, from 22 many at 3.0 are empty
TUNED = {  # the record training stores (seq2seq.train.tune_decoding), as a test would read it back
    "values": {"length_penalty": 3.0, "max_len_a": 0.5},
    "defaults": {"length_penalty": 1.0, "max_len_a": 1.2},
    "chosen": True,
    "bleu": 22.4,
    "default_bleu": 20.5,
    "sentences": 500,
    "beam_size": 5,
}


def write_checkpoint(path: Path, decoding: dict[str, Any] | None = TUNED) -> Path:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, max_positions=128, sharpness=4.0)
    with torch.no_grad():
        eos = model.output.weight[tokenizer.eos_id]
        model.decoder.final_norm.bias.add_(EOS_PUSH * eos / eos.norm() ** 2)
    extra = {"config": {"data": {"src_lang": "en", "tgt_lang": "xx"}}}
    if decoding is not None:
        extra["tuned_decoding"] = decoding
    return save_tiny_checkpoint(path, model, tokenizer, step=3, **extra)

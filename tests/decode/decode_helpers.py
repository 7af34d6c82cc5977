"""Tiny random models with peaky output distributions, and teacher-forced scoring, for search tests."""

from __future__ import annotations

import itertools

import tiny_models
import torch
from torch import Tensor, nn
from wrapped_model import Wrapped

from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.penalties import length_penalty
from seq2seq.model import Seq2Seq
from seq2seq.nn.kv_cache import DecoderState

PAD, UNK, BOS, EOS = 0, 1, 2, 3
IDS = {"ids": SpecialIds(bos=BOS, eos=EOS, pad=PAD)}


def tiny_model(vocab: int = 12, *, seed: int = 0, sharpness: float = 6.0) -> Seq2Seq:
    """The tiny model with untied output weights scaled up, so that choices are clear-cut, not near-ties."""
    untied = {"share_embeddings": False, "share_decoder_output": False}
    return tiny_models.tiny_model(vocab, seed=seed, pad_id=PAD, sharpness=sharpness, **untied)


class Biased(Wrapped):
    """A model whose logits get a fixed per-token bias (e.g. to make eos rare or common)."""

    def __init__(self, model: Seq2Seq, bias: Tensor) -> None:
        super().__init__(model)
        self.register_buffer("bias", bias)
        self.rows_per_step: list[int] = []  # decode_step batch sizes, to watch batches shrink

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.model(src, tgt_in) + self.bias

    def decode_step(self, prev_tokens: Tensor, state: DecoderState) -> tuple[Tensor, DecoderState]:
        self.rows_per_step.append(prev_tokens.shape[0])
        logits, state = self.model.decode_step(prev_tokens, state)
        return logits + self.bias, state


def eos_biased(vocab: int = 12, eos_bias: float = 0.0, **kwargs) -> Biased:
    bias = torch.zeros(vocab)
    bias[EOS] = eos_bias
    return Biased(tiny_model(vocab, **kwargs), bias).eval()


def sources(lengths: list[int], *, vocab: int = 12, seed: int = 0) -> Tensor:
    """Right-padded random sources ending in eos. Shapes: -> (len(lengths), max(lengths))."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), PAD, dtype=torch.long)
    for row, length in enumerate(lengths):
        src[row, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=gen)
        src[row, length - 1] = EOS
    return src


@torch.no_grad()
def teacher_forced(model: nn.Module, src: Tensor, outputs: list[list[int]]) -> list[list[float]]:
    """Per-token log-probabilities of each output followed by eos, from one full forward pass.

    Shapes: src (1, S); outputs: hypotheses of that one sentence.
    """
    width = max(len(o) for o in outputs) + 1
    tgt_in = torch.full((len(outputs), width), PAD, dtype=torch.long)
    for row, output in enumerate(outputs):
        tgt_in[row, : len(output) + 1] = torch.tensor([BOS, *output])
    logprobs = torch.log_softmax(model(src.expand(len(outputs), -1), tgt_in).float(), dim=-1)  # (n, T, V)
    result = []
    for row, output in enumerate(outputs):
        targets = torch.tensor([*output, EOS])
        result.append(logprobs[row, torch.arange(len(targets)), targets].tolist())
    return result


def exhaustive_ranking(
    model: nn.Module, src: Tensor, *, tokens: list[int], max_len: int, alpha: float
) -> list[tuple[float, list[int]]]:
    """Every output of up to `max_len` tokens from `tokens`, scored like beam search, best first."""
    outputs = [list(o) for n in range(max_len + 1) for o in itertools.product(tokens, repeat=n)]
    scored = [
        (sum(lp) / length_penalty(len(o) + 1, alpha), o)
        for o, lp in zip(outputs, teacher_forced(model, src, outputs))
    ]
    return sorted(scored, key=lambda pair: pair[0], reverse=True)

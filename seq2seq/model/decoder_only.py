"""The decoder-only (GPT-style) family: one self-attention stack over `source <tag> target </s>`.

Layout. A batch's sources arrive right-padded (B, S) like the encoder-decoder's; here they are moved
to the right (left-padded), so that every row's source ends at column S and its target starts there:

    columns  0 ........ S-1 | S     S+1 ...
    row      pad pad x1 x2 x3 | <tag> y1 y2 ... pad

The tag is the target side's begin-of-sentence token (one translation direction per model). With the
source ending at one column for every row, the target starts at the same column, cached decoding
appends one column per step for the whole batch, and the prefix LM's bidirectional part is simply the
first S columns (`AttentionContext.prefix`). Left padding shifts a row's tokens, so absolute positions
(sinusoidal, learned) are given per row, counted from the row's first real token; RoPE and ALiBi
depend only on distances and use the columns. Padding therefore changes no output.

Search sees the same surface as the encoder-decoder's: `encode` is the prefill (the source run through
the stack once, its keys and values kept), `init_state` copies them into each hypothesis' KV cache,
`decode_step` feeds the tag and then one token per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from seq2seq.errors import UserError
from seq2seq.model.families import DECODER_ONLY
from seq2seq.model.transformer import Stack
from seq2seq.nn.embeddings import OutputProjection
from seq2seq.nn.kv_cache import DecoderState, KVCache
from seq2seq.nn.packing import Packing

FAMILY = DECODER_ONLY


@dataclass
class PrefilledSource:
    """The source run through the stack (`DecoderOnly.encode`).

    kv:   per layer, the source's keys and values, each (B, H, S, Dh), left-padded.
    keep: (B, S) True = real source token (left-padded: the padding comes first).
    """

    kv: list[tuple[Tensor, Tensor]]
    keep: Tensor


def left_pad(src: Tensor, pad_id: int) -> tuple[Tensor, Tensor]:
    """Move each row's tokens to the right end. Shapes: src (B, S) right-padded -> src, keep (B, S)."""
    length = src.shape[1]
    keep = src != pad_id  # (B, S)
    shift = length - keep.sum(dim=1, keepdim=True)  # (B, 1) pads to put in front
    source_column = torch.arange(length, device=src.device) - shift  # (B, S) where each column reads from
    moved = src.gather(1, source_column.clamp(min=0))  # (B, S)
    keep_left = source_column >= 0
    return moved.masked_fill(~keep_left, pad_id), keep_left


def row_positions(columns: Tensor, keep_source: Tensor) -> Tensor:
    """Absolute positions of `columns` per row, counted from the row's first real source token.

    Shapes: columns (T,), keep_source (B, S) left-padded -> (B, T); pads get position 0.
    """
    first = keep_source.shape[1] - keep_source.sum(dim=1, keepdim=True)  # (B, 1)
    return (columns[None, :] - first).clamp(min=0)


class DecoderOnly(nn.Module):
    """A causal (or prefix-LM) Transformer that translates by continuing `source <tag>`.

    `stack` is a `Stack` of EncoderLayers (self-attention + feed-forward) with its own embedding and
    position scheme; `config` holds the builder arguments and the family (saved in checkpoints).
    A SearchableModel (seq2seq.decode.searchable), like Seq2Seq.
    """

    family = FAMILY
    returns_log_probs = False  # decode_step gives logits, which the search normalises
    static_decoding = False  # its searches always grow their caches (seq2seq.decode.compiled: enc-dec only)

    def __init__(
        self,
        stack: Stack,
        output: OutputProjection,
        *,
        pad_id: int,
        prefix_lm: bool,
        config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.stack = stack
        self.output = output
        self.pad_id = pad_id
        self.prefix_lm = prefix_lm
        self.config = dict(config or {})

    @property
    def max_positions(self) -> int:
        """Positions the stack holds, shared by the source, the tag and the output."""
        return int(self.config["max_positions"])

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        *,
        output_keep: Tensor | None = None,
        project: bool = True,
        source_lm: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Teacher-forced logits of the target part, as `Seq2Seq.forward` gives them.

        `source_lm`: also return the states that predict source tokens 2..n of each row (a source
        language-model term for the loss), in row-major order: the labels are src[:, 1:] where not pad.
        Shapes: src (B, S), tgt_in (B, T) -> (B, T, V); with output_keep (B, T) -> (N, V); with
        project=False, D instead of V; with source_lm, a pair (target part, (M, D) source states).
        """
        if source_lm and self.prefix_lm:
            raise UserError("a source language-model loss needs a causal model; set model.prefix_lm=false "
                            "or loss.source_weight=0")  # fmt: skip
        src_left, src_keep = left_pad(src, self.pad_id)  # (B, S)
        width = src.shape[1]
        tokens = torch.cat([src_left, tgt_in], dim=1)  # (B, S + T)
        keep = torch.cat([src_keep, tgt_in != self.pad_id], dim=1)  # (B, S + T)
        hidden = self._run(tokens, keep, src_keep, start=0, caches=None)  # (B, S + T, D)
        target = hidden[:, width:]  # (B, T, D)
        if output_keep is not None:
            target = target[output_keep]  # (N, D)
        target = self.output(target) if project else target
        if not source_lm:
            return target
        predicts_next = src_keep[:, :-1] & src_keep[:, 1:]  # (B, S - 1): next column is a source token
        return target, hidden[:, : width - 1][predicts_next]  # (M, D)

    def _run(
        self, tokens: Tensor, keep: Tensor, src_keep: Tensor, *, start: int, caches: list[KVCache] | None
    ) -> Tensor:
        """The stack over columns start.. of the layout. Shapes: tokens, keep (B, t) -> (B, t, D).

        keep covers every key column (0 .. start + t): the cache's and the new ones.
        """
        length = tokens.shape[1]
        columns = torch.arange(start, start + length, device=tokens.device)  # (t,)
        absolute = row_positions(columns, src_keep) if self.stack.positions.is_absolute else columns
        x = self.stack._embed(tokens, absolute)  # (B, t, D)
        packing = Packing.of(keep) if caches is None else None
        context = self.stack.positions.self_context(
            keep=keep,
            causal=True,
            prefix=src_keep.shape[1] if self.prefix_lm and start == 0 else 0,
            q_positions=columns,
            k_positions=torch.arange(start + length, device=tokens.device),
            packing=packing,
        )
        if packing is not None:
            x = packing.pack(x)  # (N, D)
        for index, layer in enumerate(self.stack.layers):
            if caches is None:
                x = self.stack._run_layer(layer, x, context)
            else:
                x = layer(x, context, caches[index])
        x = self.stack.final_norm(x)
        return x if packing is None else packing.unpack(x)

    def encode(self, src: Tensor) -> PrefilledSource:
        """The prefill: the source through the stack once, its keys and values kept.

        Shapes: src (B, S) right-padded -> PrefilledSource(kv: per layer 2 x (B, H, S, Dh), keep (B, S)).
        """
        src_left, src_keep = left_pad(src, self.pad_id)
        caches = [KVCache(src.shape[1]) for _ in self.stack.layers]
        self._run(src_left, src_keep, src_keep, start=0, caches=caches)
        return PrefilledSource(kv=[cache.contents() for cache in caches], keep=src_keep)

    def init_state(
        self, memory: PrefilledSource, beam_size: int = 1, max_steps: int | None = None
    ) -> DecoderState:
        """Every hypothesis' KV cache starts with its sentence's source keys and values.

        Row b * beam_size + k of the state is hypothesis k of sentence b; `max_steps` (the most tokens
        the search feeds, tag included) sizes the caches once.
        """
        width = memory.keep.shape[1]
        caches = []
        for k, v in memory.kv:
            cache = KVCache(width + (max_steps if max_steps is not None else 16))
            cache.append(k.repeat_interleave(beam_size, dim=0), v.repeat_interleave(beam_size, dim=0))
            caches.append(cache)
        positions = torch.arange(width, device=memory.keep.device)  # (S,)
        return DecoderState(
            caches=caches, cross_kv=[], memory_keep=memory.keep, memory_positions=positions, group=beam_size
        )

    def decode_step(self, prev_tokens: Tensor, state: DecoderState) -> tuple[Tensor, DecoderState]:
        """Logits for the token after `prev_tokens` (the tag first). Shapes: prev_tokens (N, t) -> (N, V)."""
        src_keep = state.memory_keep  # (M, S)
        if state.group > 1:
            src_keep = src_keep.repeat_interleave(state.group, dim=0)  # (N, S)
        rows, new = prev_tokens.shape
        generated = src_keep.new_ones(rows, state.steps + new)  # (N, steps + t)
        keep = torch.cat([src_keep, generated], dim=1)  # (N, S + steps + t)
        start = src_keep.shape[1] + state.steps
        hidden = self._run(prev_tokens, keep, src_keep, start=start, caches=state.caches)  # (N, t, D)
        state.steps += new
        return self.output(hidden[:, -1]), state

    def output_room(self, src: Tensor) -> Tensor:
        """Output tokens (before eos) each sentence's positions leave: max_positions - source - tag.

        Shapes: src (B, S) -> (B,).
        """
        return self.max_positions - (src != self.pad_id).sum(dim=1) - 1

    def cross_attention(self, src: Tensor, tgt_in: Tensor, *, layer: int = -1) -> Tensor:
        raise UserError("a decoder-only model has no cross-attention to align with; "
                        "drop alignment= and attention_dir= for this checkpoint")  # fmt: skip


__all__ = ["FAMILY", "DecoderOnly", "PrefilledSource", "left_pad", "row_positions"]

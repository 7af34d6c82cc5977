"""Encoder, Decoder and the Seq2Seq model: full forward for training, encode/decode_step for search.

Masks are derived from `pad_id` here, once: `src_keep = src != pad_id` (True = real token).
Targets are right-padded and decoder self-attention is causal, so real target tokens never see
padding and the decoder needs no target mask at all (padded positions' outputs are ignored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from seq2seq.errors import UserError
from seq2seq.model.families import ENCODER_DECODER
from seq2seq.nn.attention import AttentionContext
from seq2seq.nn.dropout import Dropout
from seq2seq.nn.embeddings import OutputProjection, TokenEmbedding
from seq2seq.nn.kv_cache import CacheSlot, DecoderState, KVCache, StaticKVCache
from seq2seq.nn.layers import MemoryDownsampler
from seq2seq.nn.packing import Packing
from seq2seq.nn.positional import LearnedPositions, RotaryEmbedding, SinusoidalPositions, alibi_slopes

POSITIONAL_KINDS = ("sinusoidal", "learned", "rope", "alibi")


@dataclass
class EncoderOutput:
    """The encoder's result. states: (B, S, D); keep: (B, S) True = real source token."""

    states: Tensor
    keep: Tensor


class PositionScheme(nn.Module):
    """One stack's position machinery; builds the AttentionContext shared by all its layers.

    `sinusoid_layout` picks the sinusoids' frequencies (seq2seq.nn.positional.sinusoid_table);
    `offset` is the absolute position of column 0 (sinusoidal and learned positions; RoPE and ALiBi
    see only distances and ignore it). Every caller passes columns, the scheme adds the offset.
    """

    def __init__(
        self,
        kind: str,
        *,
        d_model: int,
        n_heads: int,
        max_positions: int,
        alibi_cross: bool,
        sinusoid_layout: str = "standard",
        offset: int = 0,
    ) -> None:
        super().__init__()
        self.kind = kind
        self.alibi_cross = alibi_cross
        self.absolute: nn.Module | None = None
        self.rotary: RotaryEmbedding | None = None
        if kind == "sinusoidal":
            self.absolute = SinusoidalPositions(d_model, layout=sinusoid_layout, offset=offset)
        elif kind == "learned":
            self.absolute = LearnedPositions(d_model, max_positions, offset=offset)
        elif kind == "rope":
            self.rotary = RotaryEmbedding(d_model // n_heads)
        self.register_buffer("slopes", alibi_slopes(n_heads) if kind == "alibi" else None, persistent=False)

    @property
    def is_absolute(self) -> bool:
        """Whether positions are added to the embeddings (sinusoidal, learned) rather than distances
        entering attention (RoPE, ALiBi)."""
        return self.absolute is not None

    def embed(self, x: Tensor, positions: Tensor) -> Tensor:
        """Add absolute positions if this scheme has them. Shapes: x (B, T, D), positions (T,) or (B, T)."""
        return x if self.absolute is None else x + self.absolute(positions).to(x.dtype)

    def self_context(
        self,
        *,
        keep: Tensor | None,
        causal: bool,
        q_positions: Tensor,
        k_positions: Tensor,
        packing: Packing | None = None,
        prefix: int = 0,
    ) -> AttentionContext:
        rope = self.rotary(q_positions) if self.rotary is not None else None
        return AttentionContext(
            keep=keep,
            causal=causal,
            prefix=prefix,
            rope=rope,
            alibi_slopes=self.slopes,
            q_positions=q_positions,
            k_positions=k_positions,
            packing=packing,
        )

    def cross_context(
        self, *, keep: Tensor, q_positions: Tensor, memory_positions: Tensor
    ) -> AttentionContext:
        slopes = self.slopes if self.alibi_cross else None
        return AttentionContext(
            keep=keep, alibi_slopes=slopes, q_positions=q_positions, k_positions=memory_positions
        )


class Stack(nn.Module):
    """Shared plumbing: embedding + positions + dropout, layers with optional checkpointing, final norm."""

    def __init__(
        self,
        embedding: TokenEmbedding,
        positions: PositionScheme,
        layers: list[nn.Module],
        *,
        d_model: int,
        norm: str,
        dropout: float,
        checkpoint_activations: bool,
    ) -> None:
        super().__init__()
        self.embedding = embedding
        self.positions = positions
        self.layers = nn.ModuleList(layers)
        self.dropout = Dropout(dropout)
        self.final_norm = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()
        self.checkpoint_activations = checkpoint_activations

    def _embed(self, tokens: Tensor, positions: Tensor) -> Tensor:
        return self.dropout(self.positions.embed(self.embedding(tokens), positions))  # (B, T, D)

    def _run_layer(self, layer: Callable[..., Tensor], *args: Any) -> Tensor:
        if self.checkpoint_activations and self.training and torch.is_grad_enabled():
            return checkpoint(layer, *args, use_reentrant=False)
        return layer(*args)


class Encoder(Stack):
    def forward(self, src: Tensor, keep: Tensor) -> Tensor:
        """Shapes: src (B, S), keep (B, S) -> (B, S, D).

        The layers run on the real tokens only when that pays (nn/packing.py); the output is then
        zero at padded positions, which every reader masks anyway.
        """
        positions = torch.arange(src.shape[1], device=src.device)  # (S,)
        x = self._embed(src, positions)  # (B, S, D)
        packing = Packing.of(keep)
        context = self.positions.self_context(
            keep=keep, causal=False, q_positions=positions, k_positions=positions, packing=packing
        )
        if packing is not None:
            x = packing.pack(x)  # (N, D)
        for layer in self.layers:
            x = self._run_layer(layer, x, context)
        x = self.final_norm(x)
        return x if packing is None else packing.unpack(x)


class Decoder(Stack):
    def __init__(self, *args: Any, downsampler: MemoryDownsampler, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.downsampler = downsampler

    def project_memory(self, memory: EncoderOutput) -> tuple[list[tuple[Tensor, Tensor]], Tensor, Tensor]:
        """Pool the memory and compute every layer's cross-attention K/V once.

        Shapes: -> per layer 2 x (B, H, S', Dh); keep (B, S'); positions (S',)
        """
        pooled, keep, positions = self.downsampler(memory.states, memory.keep)
        packing = Packing.of(keep)
        return [layer.project_memory(pooled, packing) for layer in self.layers], keep, positions

    def forward(self, tgt_in: Tensor, memory: EncoderOutput) -> Tensor:
        """Shapes: tgt_in (B, T), memory.states (B, S, D) -> (B, T, D)."""
        cross_kv, memory_keep, memory_positions = self.project_memory(memory)
        x, self_context, cross_context = self._prepare(tgt_in, 0, memory_keep, memory_positions)
        for index, layer in enumerate(self.layers):
            x = self._run_layer(layer, x, cross_kv[index], self_context, cross_context)
        return self.final_norm(x)

    def forward_attending(
        self, tgt_in: Tensor, memory: EncoderOutput, *, layer: int, head: int
    ) -> tuple[Tensor, Tensor]:
        """`forward`, plus the cross-attention weights of head `head` of layer `layer`, with their
        gradient (guided alignment). That layer runs without activation checkpointing.
        Shapes: tgt_in (B, T), memory.states (B, S, D) -> (B, T, D), (B, T, S')."""
        cross_kv, memory_keep, memory_positions = self.project_memory(memory)
        x, self_context, cross_context = self._prepare(tgt_in, 0, memory_keep, memory_positions)
        chosen = range(len(self.layers))[layer]
        weights = x.new_zeros(0)
        for index, decoder_layer in enumerate(self.layers):
            if index == chosen:
                x, weights = decoder_layer.forward_attending(
                    x, cross_kv[index], self_context, cross_context, head
                )
            else:
                x = self._run_layer(decoder_layer, x, cross_kv[index], self_context, cross_context)
        return self.final_norm(x), weights

    def step(self, tokens: Tensor, state: DecoderState) -> Tensor:
        """Run the new tokens through the cached decoder. Shapes: tokens (N, t) -> (N, t, D)."""
        x, self_context, cross_context = self._prepare(
            tokens, state.steps, state.memory_keep, state.memory_positions
        )
        for layer, cache, memory_kv in zip(self.layers, state.caches, state.cross_kv):
            x = layer(x, memory_kv, self_context, cross_context, cache)
        state.steps += tokens.shape[1]
        return self.final_norm(x)

    def static_step(
        self,
        tokens: Tensor,
        position: Tensor,
        caches: list[tuple[Tensor, Tensor]],
        cross_kv: list[tuple[Tensor, Tensor]],
        memory_keep: Tensor,
        memory_positions: Tensor,
    ) -> Tensor:
        """`step` on static caches (seq2seq.nn.kv_cache.StaticKVCache), with every input a tensor, so one
        compiled graph serves every step: the new keys and values are written at `position`, and each
        query attends over the whole buffer, masked to the positions up to its own.

        Shapes: tokens (N, 1); position (1,) long; caches per layer 2 x (N, H, capacity, Dh) -> (N, 1, D)
        """
        k_positions = torch.arange(caches[0][0].shape[2], device=tokens.device)  # (capacity,)
        self_context = self.positions.self_context(
            keep=(k_positions <= position)[None], causal=False, q_positions=position, k_positions=k_positions
        )
        cross_context = self.positions.cross_context(
            keep=memory_keep, q_positions=position, memory_positions=memory_positions
        )
        x = self._embed(tokens, position)  # (N, 1, D)
        for layer, (keys, values), memory_kv in zip(self.layers, caches, cross_kv):
            x = layer(x, memory_kv, self_context, cross_context, CacheSlot(keys, values, position))
        return self.final_norm(x)

    def cross_attention(self, tgt_in: Tensor, memory: EncoderOutput, *, layer: int = -1) -> Tensor:
        """Probabilities of layer `layer`'s cross-attention. Shapes: tgt_in (B, T) -> (B, H, T, S')."""
        cross_kv, memory_keep, memory_positions = self.project_memory(memory)
        x, self_context, cross_context = self._prepare(tgt_in, 0, memory_keep, memory_positions)
        chosen = range(len(self.layers))[layer]
        for index in range(chosen):
            x = self.layers[index](x, cross_kv[index], self_context, cross_context)
        return self.layers[chosen].cross_attention_probabilities(
            x, cross_kv[chosen], self_context, cross_context
        )

    def _prepare(
        self, tokens: Tensor, start: int, memory_keep: Tensor, memory_positions: Tensor
    ) -> tuple[Tensor, AttentionContext, AttentionContext]:
        """Embed tokens at positions start.. and build both attention contexts (no host sync)."""
        length = tokens.shape[1]
        positions = torch.arange(start, start + length, device=tokens.device)  # (t,)
        all_positions = torch.arange(start + length, device=tokens.device)  # keys: cache + new
        self_context = self.positions.self_context(
            keep=None, causal=True, q_positions=positions, k_positions=all_positions
        )
        cross_context = self.positions.cross_context(
            keep=memory_keep, q_positions=positions, memory_positions=memory_positions
        )
        return self._embed(tokens, positions), self_context, cross_context


class Seq2Seq(nn.Module):
    """Encoder-decoder Transformer. `config` holds the builder arguments (saved in checkpoints).

    A SearchableModel (seq2seq.decode.searchable): every search runs it through that surface; and a
    StaticStepping one (`static_step`), which compiled decoding compiles.
    """

    family = ENCODER_DECODER
    returns_log_probs = False  # decode_step gives logits, which the search normalises

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        output: OutputProjection,
        *,
        pad_id: int,
        config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.output = output
        self.pad_id = pad_id
        self.config = dict(config or {})
        # Set by seq2seq.decode.compiled: the function that runs a step on static caches (`static_step`,
        # or its compiled version); None = the growing caches of today's eager step.
        self.static_step_function: Callable[..., Tensor] | None = None
        # `static_step` compiled, kept when switched back to eager: compiling again reuses it.
        self.compiled_static_step: Callable[..., Tensor] | None = None

    @property
    def static_decoding(self) -> bool:
        """Whether searches run on static caches (init_state then needs max_steps)."""
        return self.static_step_function is not None

    @property
    def max_positions(self) -> int:
        """Positions each stack holds (the decoder's bos included): the builder's `max_positions`."""
        return int(self.config["max_positions"])

    @property
    def memory_stride(self) -> int:
        """Source tokens per cross-attention column: the memory is pooled by `cross_downsample`."""
        return int(self.config["cross_downsample"])

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        *,
        output_keep: Tensor | None = None,
        project: bool = True,
        attending: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Teacher-forced logits.

        `output_keep` (B, T) selects the positions to project to the vocabulary (the loss needs only
        real target tokens: padded positions would cost D x V multiply-adds each, plus their share of
        the loss). `project=False` returns the decoder's output states instead of logits, for a loss
        that applies `self.output.weight` and `self.output.bias` itself
        (seq2seq.train.loss.projected_label_smoothed_nll).
        Shapes: src (B, S), tgt_in (B, T) -> (B, T, V); with output_keep -> (N, V), the kept positions
        in row-major order, N = output_keep.sum(); with project=False, D instead of V.
        `attending=True` (guided alignment training) returns, besides, the cross-attention weights of
        the model's alignment head (`alignment_layer`, `alignment_head`): (B, T, S').
        """
        memory = self.encode(src)
        weights = None
        if attending:
            layer, head = self.alignment_head_position()
            hidden, weights = self.decoder.forward_attending(tgt_in, memory, layer=layer, head=head)
        else:
            hidden = self.decoder(tgt_in, memory)  # (B, T, D)
        if output_keep is not None:
            hidden = hidden[output_keep]  # (N, D)
        out = self.output(hidden) if project else hidden
        return out if weights is None else (out, weights)

    def alignment_head_position(self) -> tuple[int, int]:
        """(layer, head) of the cross-attention head trained on word alignments (guided alignment)."""
        layer, head = self.config.get("alignment_layer"), self.config.get("alignment_head")
        if layer is None or head is None:
            raise UserError("guided alignment trains one cross-attention head: set model.alignment_layer "
                            "and model.alignment_head (e.g. -2 and 0)")  # fmt: skip
        return int(layer), int(head)

    def encode(self, src: Tensor) -> EncoderOutput:
        """Shapes: src (B, S) -> EncoderOutput(states (B, S, D), keep (B, S))."""
        keep = src != self.pad_id  # (B, S)
        return EncoderOutput(states=self.encoder(src, keep), keep=keep)

    def init_state(
        self, memory: EncoderOutput, beam_size: int = 1, max_steps: int | None = None
    ) -> DecoderState:
        """Cross-attention K/V computed once and shared by the `beam_size` hypotheses of each sentence.

        Row b * beam_size + k of the state is hypothesis k of sentence b. `max_steps`: the most
        tokens the search will feed (bos included), if known: the self-attention caches allocate
        that much once instead of growing.
        """
        cross_kv, keep, positions = self.decoder.project_memory(memory)
        # Contiguous once here, or every step's attention matmul would copy the strided K/V views.
        cross_kv = [(k.contiguous(), v.contiguous()) for k, v in cross_kv]  # each (B, H, S', Dh)
        if self.static_decoding:
            return self._static_state(cross_kv, keep, positions, beam_size=beam_size, max_steps=max_steps)
        caches = [KVCache() if max_steps is None else KVCache(max_steps) for _ in self.decoder.layers]
        return DecoderState(
            caches=caches, cross_kv=cross_kv, memory_keep=keep, memory_positions=positions, group=beam_size
        )

    def _static_state(
        self,
        cross_kv: list[tuple[Tensor, Tensor]],
        keep: Tensor,
        positions: Tensor,
        *,
        beam_size: int,
        max_steps: int | None,
    ) -> DecoderState:
        """A state whose caches hold `max_steps` steps from the start (static_step never grows them)."""
        if max_steps is None:
            raise ValueError("static decoding needs max_steps: the caches are sized once, for every step")
        like = cross_kv[0][0]  # the compute dtype (autocast's, when on) and device
        _, heads, _, head_dim = like.shape
        rows = keep.shape[0] * beam_size
        caches = [StaticKVCache(rows, heads, max_steps, head_dim, like=like) for _ in self.decoder.layers]
        return DecoderState(
            caches=caches, cross_kv=cross_kv, memory_keep=keep, memory_positions=positions, group=beam_size,
            position=torch.zeros(1, dtype=torch.long, device=keep.device),
        )  # fmt: skip

    def decode_step(self, prev_tokens: Tensor, state: DecoderState) -> tuple[Tensor, DecoderState]:
        """Logits for the token after `prev_tokens`. Shapes: prev_tokens (N, t) -> (N, V)."""
        if state.position is not None:  # static caches: one token per row and step
            caches = [cache.buffers for cache in state.caches]  # type: ignore[attr-defined]
            tokens = prev_tokens.contiguous()  # one stride whatever the search sliced it from: no recompile
            # A search keeps the kind of state it started with, even if another thread switches the
            # model back to eager meanwhile: the static step then runs eagerly, with the same results.
            step = self.static_step_function or self.static_step
            logits = step(
                tokens, state.position, caches, state.cross_kv, state.memory_keep, state.memory_positions
            )
            state.advance()
            return logits, state
        hidden = self.decoder.step(prev_tokens, state)  # (N, t, D)
        return self.output(hidden[:, -1]), state

    def static_step(
        self,
        prev_tokens: Tensor,
        position: Tensor,
        caches: list[tuple[Tensor, Tensor]],
        cross_kv: list[tuple[Tensor, Tensor]],
        memory_keep: Tensor,
        memory_positions: Tensor,
    ) -> Tensor:
        """`decode_step` on static caches, every input a tensor (what seq2seq.decode.compiled compiles).

        Shapes: prev_tokens (N, 1); position (1,); caches per layer 2 x (N, H, capacity, Dh) -> (N, V)
        """
        hidden = self.decoder.static_step(
            prev_tokens, position, caches, cross_kv, memory_keep, memory_positions
        )
        return self.output(hidden[:, -1])

    def output_room(self, src: Tensor) -> Tensor:
        """Output tokens (before eos) the decoder's positions hold: max_positions - 1 (bos takes one).

        Shapes: src (B, S) -> (B,).
        """
        return torch.full((src.shape[0],), self.max_positions - 1, dtype=torch.long, device=src.device)

    @torch.no_grad()
    def cross_attention(self, src: Tensor, tgt_in: Tensor, *, layer: int = -1) -> Tensor:
        """Cross-attention probabilities of one decoder layer (for heat maps and alignments).

        Shapes: src (B, S), tgt_in (B, T) -> (B, H, T, S'), S' = pooled source length.
        """
        return self.decoder.cross_attention(tgt_in, self.encode(src), layer=layer)

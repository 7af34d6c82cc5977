"""The contract between the searches and a model: everything greedy, beam, sampling and constrained search,
the per-step rules, shortlists and teacher forcing ask of what they search.

A translating family (seq2seq.model: Seq2Seq, DecoderOnly), an Ensemble of them (seq2seq.decode.ensemble)
and a test's scripted model implement it with real attributes; the searches call it without probing,
so a new family gets every search by implementing this surface (tests/decode/test_searchable.py checks
each implementation's attributes and signatures against it). An exported model is not searched here: it
runs in CTranslate2 behind seq2seq.inference.engines.Engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from torch import Tensor


@runtime_checkable
class SearchState(Protocol):
    """The decoder state a search carries between steps: one row per hypothesis, kept in step with the
    search's rows by `reorder` (seq2seq.nn.kv_cache.DecoderState.reorder says what `memory` means)."""

    def reorder(self, index: Tensor, *, memory: bool | Tensor = True) -> SearchState: ...


@runtime_checkable
class SearchableModel(Protocol):
    """What a search calls on a model. Every implementation is also an nn.Module, whose `eval()` and
    `modules()` (a shortlist swaps the output projections it finds there) the searches use too."""

    family: str  # seq2seq.model.families: a search never branches on it; ensembles and compiling check it
    pad_id: int
    config: dict[str, Any]  # the builder arguments (tgt_vocab_size, window, ...), saved in checkpoints
    training: bool  # a search warns when dropout is on

    @property
    def returns_log_probs(self) -> bool:
        """Whether decode_step gives log-probabilities already (an Ensemble's mean), used as they are;
        False: logits, which the search normalises."""
        ...

    @property
    def static_decoding(self) -> bool:
        """Whether searches run on static caches (seq2seq.decode.compiled): init_state then sizes them for
        every step, and needs max_steps."""
        ...

    @property
    def max_positions(self) -> int:
        """The positions the model holds, bos and (decoder-only) the source included: the one limit every
        layer reads (an Ensemble's is its members' smallest)."""
        ...

    def encode(self, src: Tensor) -> Any:
        """Shapes: src (B, S) right-padded with pad_id -> the family's encoder output (its memory)."""
        ...

    def init_state(self, memory: Any, beam_size: int = 1, max_steps: int | None = None) -> SearchState:
        """The state of B * beam_size rows (row b * beam_size + k: hypothesis k of sentence b); `max_steps`:
        the most tokens the search feeds, bos included, if known."""
        ...

    def decode_step(self, prev_tokens: Tensor, state: Any) -> tuple[Tensor, Any]:
        """Scores of the token after `prev_tokens`. Shapes: prev_tokens (N, t) -> (N, V); under a compact
        shortlist projection (N, C), the batch's candidate columns (seq2seq.decode.shortlist)."""
        ...

    def output_room(self, src: Tensor) -> Tensor:
        """Output tokens (before eos) each sentence's positions leave. Shapes: src (B, S) -> (B,) long."""
        ...


@runtime_checkable
class StaticStepping(SearchableModel, Protocol):
    """A searchable model whose decoder step also runs on static caches with every input a tensor, the
    step seq2seq.decode.compiled compiles. A family that lacks it (decoder-only today) decodes on growing
    caches only; compiled decoding asks this protocol, never which family a model is."""

    static_step: Callable[..., Tensor]  # decode_step on static caches: what torch.compile compiles
    static_step_function: Callable[..., Tensor] | None  # what searches on static caches run; None: growing
    compiled_static_step: Callable[..., Tensor] | None  # static_step compiled, kept for the next compile


__all__ = ["SearchState", "SearchableModel", "StaticStepping"]

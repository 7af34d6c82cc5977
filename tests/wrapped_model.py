"""A model wrapped by a test to change its scores (an eos bias, a watch on the batch sizes): it stays a
SearchableModel (seq2seq.decode.searchable) by handing every part of that surface to the model inside,
so a subclass overrides only what it changes (usually `decode_step`)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from torch import Tensor, nn

from seq2seq.decode.searchable import SearchState


class Wrapped(nn.Module):
    """The model inside's search surface, unchanged."""

    returns_log_probs = False  # what it wraps is a single model: its decode_step gives logits

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.family, self.pad_id, self.config = model.family, model.pad_id, model.config

    # read from the model inside at each use, as the rest of the surface is handed to it
    static_decoding = property(attrgetter("model.static_decoding"))
    max_positions = property(attrgetter("model.max_positions"))

    def encode(self, src: Tensor) -> Any:
        return self.model.encode(src)

    def init_state(self, memory: Any, beam_size: int = 1, max_steps: int | None = None) -> SearchState:
        return self.model.init_state(memory, beam_size=beam_size, max_steps=max_steps)

    def decode_step(self, prev_tokens: Tensor, state: Any) -> tuple[Tensor, Any]:
        return self.model.decode_step(prev_tokens, state)

    def output_room(self, src: Tensor) -> Tensor:
        return self.model.output_room(src)

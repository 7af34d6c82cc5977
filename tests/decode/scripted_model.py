"""A model that follows a script: at output step t it prefers token script[t] (then eos), whatever it has
written so far. Its favourite output is known in advance, so a search test can say exactly what a
search's rules let through and what they change."""

from __future__ import annotations

import torch
from decode_helpers import EOS, PAD
from torch import Tensor, nn

from seq2seq.model.families import ENCODER_DECODER


class Steps:
    """The decoder state of a script: only the step count, the same for every row (reordering keeps it)."""

    def __init__(self) -> None:
        self.steps = 0

    def reorder(self, index: Tensor, *, memory: bool | Tensor = True) -> Steps:
        return self


class Scripted(nn.Module):
    """Logits `margin` for the script's token of the step (eos after the script), 0 for every other.

    A SearchableModel (seq2seq.decode.searchable) whose positions never limit a test's outputs."""

    family = ENCODER_DECODER  # its source is its memory, as an encoder-decoder's encoder output is
    returns_log_probs = False
    static_decoding = False
    max_positions = 1 << 20
    pad_id = PAD

    def __init__(self, script: list[int], vocab: int, *, margin: float = 5.0, eos: int = EOS) -> None:
        super().__init__()
        self.script, self.vocab, self.margin, self.eos = list(script), vocab, margin, eos
        self.config = {"src_vocab_size": vocab, "tgt_vocab_size": vocab, "max_positions": self.max_positions}
        self.eval()

    def encode(self, src: Tensor) -> Tensor:
        return src

    def init_state(self, memory: Tensor, beam_size: int = 1, max_steps: int | None = None) -> Steps:
        return Steps()

    def decode_step(self, prev_tokens: Tensor, state: Steps) -> tuple[Tensor, Steps]:
        """Shapes: prev_tokens (N, 1) -> logits (N, V)."""
        wanted = self.script[state.steps] if state.steps < len(self.script) else self.eos
        state.steps += 1
        logits = torch.zeros(prev_tokens.shape[0], self.vocab)
        logits[:, wanted] = self.margin
        return logits, state

    def output_room(self, src: Tensor) -> Tensor:
        """Shapes: src (B, S) -> (B,)."""
        return torch.full((src.shape[0],), self.max_positions - 1, dtype=torch.long)

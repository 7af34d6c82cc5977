"""Several models searched as one (fairseq's `--path a.pt:b.pt`): each step scores a token by the mean of
the models' log-probabilities, and every model keeps its own encoder output and KV cache, reordered
together with the beams.

An Ensemble is a SearchableModel (seq2seq.decode.searchable), so greedy, beam, sampling and constrained
search run it unchanged; its decode_step returns log-probabilities already (`returns_log_probs`), which
the searches then use as they are: the mean of log-probabilities is not renormalised, so a hypothesis'
score is exactly the mean of what each model gives it. Under a vocabulary shortlist each member's
log-probabilities are over the row's own sentence's candidates (the state carries them,
seq2seq.decode.shortlist.RowCandidates), as the single model's are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from seq2seq.decode.searchable import SearchableModel
from seq2seq.decode.shortlist import RowCandidates, sentence_candidates
from seq2seq.errors import UserError
from seq2seq.nn.kv_cache import DecoderState


@dataclass
class EnsembleState:
    """One DecoderState per model; `reorder` moves them all the same way, and the rows' shortlist
    candidates with them."""

    states: list[DecoderState]
    candidates: RowCandidates | None = None

    def reorder(self, index: Tensor, *, memory: bool | Tensor = True) -> EnsembleState:
        for state in self.states:
            state.reorder(index, memory=memory)
        if self.candidates is not None:
            self.candidates = self.candidates.select(index)
        return self


class Ensemble(nn.Module):
    """Its members' mean, searched as one model; the family, pad id and config are the first member's."""

    returns_log_probs = True  # decode_step gives (N, V) log-probabilities, used without renormalising

    def __init__(self, models: Sequence[SearchableModel]) -> None:
        super().__init__()
        if not models:
            raise UserError("an ensemble needs at least one model")
        families = sorted({m.family for m in models})
        if len(families) > 1:
            raise UserError(f"an ensemble's models must be of one family, got {' and '.join(families)}; "
                            "ensemble checkpoints of the same model family")  # fmt: skip
        sizes = {(m.config.get("src_vocab_size"), m.config.get("tgt_vocab_size"), m.pad_id) for m in models}
        if len(sizes) > 1:
            raise UserError(f"ensemble members differ in vocabulary sizes or pad id {sorted(sizes)}; "
                            "ensemble models trained with the same tokenizer")  # fmt: skip
        self.members = nn.ModuleList(models)  # type: ignore[arg-type]  # each an nn.Module
        self.family: str = families[0]
        self.pad_id: int = models[0].pad_id
        self.config: dict[str, Any] = {**models[0].config, "max_positions": self.max_positions}

    @property
    def max_positions(self) -> int:
        """The smallest member's: every member must hold the whole search."""
        return min(model.max_positions for model in self.members)

    @property
    def static_decoding(self) -> bool:
        """Whether the members search on static caches (seq2seq.decode.compiled sets all or none)."""
        return all(model.static_decoding for model in self.members)

    def encode(self, src: Tensor) -> list[Any]:
        """Shapes: src (B, S) -> one encoder output per model."""
        return [model.encode(src) for model in self.members]

    def init_state(
        self, memory: list[Any], beam_size: int = 1, max_steps: int | None = None
    ) -> EnsembleState:
        """`memory`: one encoder output per model (`encode`)."""
        batch = sentence_candidates(self)  # under a shortlist
        return EnsembleState([
            model.init_state(own, beam_size=beam_size, max_steps=max_steps)
            for model, own in zip(self.members, memory)
        ], None if batch is None else RowCandidates.of(batch, beam_size))  # fmt: skip

    def output_room(self, src: Tensor) -> Tensor:
        """The tightest member's room for output tokens. Shapes: src (B, S) -> (B,)."""
        rooms = [model.output_room(src) for model in self.members]
        return torch.stack(rooms).amin(dim=0)

    def decode_step(self, prev_tokens: Tensor, state: EnsembleState) -> tuple[Tensor, EnsembleState]:
        """Mean of the models' next-token log-probabilities, each over the row's shortlist candidates when
        there are some. Shapes: prev_tokens (N, t) -> (N, V), or (N, C) over a compact shortlist's columns."""
        total: Tensor | None = None
        for model, member_state in zip(self.members, state.states):
            logits, _ = model.decode_step(prev_tokens, member_state)  # (N, V)
            logits = logits.float()
            if state.candidates is not None:
                logits = state.candidates.restrict_(logits)
            logprobs = torch.log_softmax(logits, dim=-1)
            total = logprobs if total is None else total.add_(logprobs)
        return total.div_(len(self.members)), state  # type: ignore[union-attr]


def members_of(model: SearchableModel) -> list[SearchableModel]:
    """The models that decode: an ensemble's members, or the model itself."""
    return list(model.members) if isinstance(model, Ensemble) else [model]  # type: ignore[arg-type]

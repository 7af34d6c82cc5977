"""What goes into a search and comes out of it: special token ids, forced prefixes, the stop check,
and the Hypothesis record (with the scoring convention every search shares)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.penalties import (
    length_penalty,
)

# A shared prefix (list of ids or a (P,) tensor), per-sentence prefixes (list of lists, lengths may
# differ), or a (B, P) tensor right-padded with the pad id.
Prefix = Sequence[int] | Sequence[Sequence[int]] | Tensor | None
# Asked once per decoding step (and before each batch of a search): True ends the search with SearchStopped.
StopCheck = Callable[[], bool]


class SearchStopped(Exception):
    """A search ended early because its caller's `stop` check said so (seq2seq.serve: every request
    waiting for it has gone); it has no result. Not a UserError: nobody made a mistake."""


def check_stop(stop: StopCheck | None) -> None:
    """Raise SearchStopped when `stop` says the search is no longer wanted."""
    if stop is not None and stop():
        raise SearchStopped("the search was stopped: nobody waits for its result")


@dataclass(frozen=True)
class SpecialIds:
    """The token ids a search treats specially. The defaults are every seq2seq tokenizer's, read from
    seq2seq.data.tokenizer (pad=0, unk=1, bos=2, eos=3)."""

    bos: int = Tokenizer.BOS_ID
    eos: int = Tokenizer.EOS_ID
    pad: int = Tokenizer.PAD_ID

    @classmethod
    def of(cls, tokenizer: Any) -> SpecialIds:
        return cls(bos=tokenizer.bos_id, eos=tokenizer.eos_id, pad=tokenizer.pad_id)


SPECIAL_IDS = SpecialIds()


@dataclass
class Hypothesis:
    """One output. score = log_prob / length_penalty(len(tokens) + 1) (= log_prob without a penalty)."""

    tokens: list[int]
    score: float
    log_prob: float
    positional_scores: list[float] | None = field(default=None, repr=False)
    qe: float | None = field(default=None, repr=False)  # a quality estimate, when a QE model scored it
    constraints_met: int | None = field(default=None, repr=False)  # phrases met, in a constrained search
    constraints_total: int | None = field(default=None, repr=False)  # phrases it was asked for
    engine: str | None = field(default=None, repr=False)  # the engine that found it, when several may


def finished_hypothesis(tokens: list[int], positional_scores: list[float], alpha: float) -> Hypothesis:
    """A Hypothesis from output tokens (without bos/eos) and per-token log-probs (eos's included)."""
    log_prob = float(sum(positional_scores))
    score = log_prob / float(length_penalty(len(tokens) + 1, alpha))
    return Hypothesis(tokens=tokens, score=score, log_prob=log_prob, positional_scores=positional_scores)

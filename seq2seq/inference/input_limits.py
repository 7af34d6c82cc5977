"""How long a source may be: what a model reads and still has room to answer, and the checked setting.

An encoder-decoder's output has positions of its own; a decoder-only model's source and output share
them, so its longest inputs, read whole, would leave no room to answer (its `output_room`, as the model
or an exported decoder-only engine tells it: seq2seq.inference.engines.Engine).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from seq2seq.errors import UserError
from seq2seq.inference.engines import Engine


def source_limits(engine: Engine, eos_id: int) -> tuple[int, int]:
    """(most, default) source lengths in tokens, eos apart: the longest source that leaves room for one
    output token, and the longest that leaves room for an output as long as itself, as the engine's
    `output_room` tells (both max_positions - 1 for an encoder-decoder)."""

    def leaves(length: int) -> int:
        sources = torch.full((1, length + 1), eos_id, device=engine.device)  # (1, S): only the count matters
        return int(engine.output_room(sources)[0])

    most = longest(lambda length: leaves(length) >= 1, engine.max_positions - 1)
    return most, longest(lambda length: leaves(length) >= length, most)


def longest(fits: Callable[[int], bool], most: int) -> int:
    """The largest length from 1 to `most` that fits (`fits` holds up to some length, then never); 1 if
    none does."""
    low, high = 1, most
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def input_limit(max_input_tokens: int | None, most: int, default: int, *, max_positions: int) -> int:
    """The longest source in tokens: the setting, or `default` (what the model reads and still has room to
    answer, source_limits). A limit of 0 or less would empty every translation without a word; one above
    `most` asks the model for positions it was not built to read."""
    if max_input_tokens is None:
        return default
    if (
        not isinstance(max_input_tokens, int)
        or isinstance(max_input_tokens, bool)
        or not 1 <= max_input_tokens <= most
    ):
        raise UserError(
            f"max_input_tokens={max_input_tokens!r} must be an integer from 1 to {most} (the longest source, "
            f"eos apart, that leaves room for output in this model's {max_positions} positions); "
            f"or null for {default}"
        )
    return max_input_tokens


__all__ = ["input_limit", "longest", "source_limits"]

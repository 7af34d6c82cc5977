"""Compiled decoding: the decoder step as one torch.compile graph over static KV caches.

Today's eager step appends to caches that grow, so its shapes change every step. With static caches
(seq2seq.nn.kv_cache.StaticKVCache) every buffer is sized once for the whole search and the step
reads its position from a tensor, so one graph serves every step of every batch: it is compiled
with dynamic sizes for rows, source length and cache capacity. New graphs are compiled only for
another kind of search (greedy, or beam search with another beam size) and for batches of one row
or one sentence, which PyTorch compiles on their own. Compiled graphs live in PyTorch's on-disk
cache, so a later process with the same model shapes compiles much faster.

`compile` is one setting of the torch engine (translate, serve, the Translator):
  * true:  compile at the first search; one-line errors name what cannot be compiled;
  * false: today's eager step;
  * auto:  compile only greedy searches on CPU, of AUTO_MIN_SENTENCES sentences or more: there the
           measured speed-up repays the compile time, while compiled beam search was no faster than
           eager within the noise of the CPU measured (benchmarks/results.md); on GPUs it is unmeasured
           (compile=true asks).
Compiled and eager decoding give the same tokens; the eager step stays the reference.
Encoder-decoder models only (ensembles of them too), without int8 layers, a vocabulary shortlist or
sliding-window attention; tested and measured in fp32.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from seq2seq.decode.ensemble import members_of
from seq2seq.decode.searchable import SearchableModel, StaticStepping
from seq2seq.errors import UserError

log = logging.getLogger(__name__)
COMPILE_SETTINGS = ("auto", "true", "false")
# auto compiles greedy searches of this many sentences: on a 2-core AVX2 CPU compiling took 44 s and
# saved about a millisecond a sentence (break-even near 40,000; the figures: benchmarks/results.md).
AUTO_MIN_SENTENCES = 50_000


def compile_setting(value: Any) -> str:
    """`compile` as one of COMPILE_SETTINGS: a config gives a bool or a string."""
    text = str(value).lower() if isinstance(value, (bool, str)) else repr(value)
    if text not in COMPILE_SETTINGS:
        raise UserError(f"compile={value!r} is not supported; choose {', '.join(COMPILE_SETTINGS)}")
    return text


def _stepping(model: SearchableModel) -> list[StaticStepping]:
    """The models whose steps compile: the model, or its ensemble's members (checked by
    `unsupported_reason` first)."""
    return [member for member in members_of(model) if isinstance(member, StaticStepping)]


def unsupported_reason(
    model: SearchableModel, *, quantization: str = "none", shortlist: bool = False
) -> str | None:
    """Why this model and setting cannot decode compiled, in words; None when they can."""
    for member in members_of(model):
        if not isinstance(member, StaticStepping):  # encoder-decoder models have a static step
            return f"it compiles encoder-decoder models, and this is {member.family}"
        if member.config.get("window") is not None:
            return "sliding-window attention decodes on growing caches only"
    if quantization != "none":
        return f"quantization={quantization} layers run PyTorch's int8 kernels, which compile cannot fuse"
    if shortlist:
        return "a shortlist swaps the output projection for each batch"
    return None


def use_static_decoding(model: SearchableModel, *, compiled: bool) -> None:
    """Make every search on `model` run on static caches: through a compiled step, or (compiled=False)
    the same step eagerly, which the tests compare with today's growing caches. A member keeps its
    compiled step (and what PyTorch compiled for it) when switched back to eager and compiled again."""
    for member in _stepping(model):
        if not compiled:
            member.static_step_function = member.static_step
            continue
        if member.compiled_static_step is None:
            # freezing: the weights become constants of the graph, which lets it pre-pack them for the
            # CPU's matrix kernels (a search never changes them; training never compiles this step).
            member.compiled_static_step = torch.compile(
                member.static_step, dynamic=True, options={"freezing": True}
            )
        member.static_step_function = member.compiled_static_step


def use_eager_decoding(model: SearchableModel) -> None:
    """Back to today's growing caches and eager step."""
    for member in _stepping(model):
        member.static_step_function = None


def should_compile(
    setting: str,
    model: SearchableModel,
    *,
    sentences: int,
    device: torch.device,
    greedy: bool = True,
    quantization: str = "none",
    shortlist: bool = False,
) -> bool:
    """Whether a search of `sentences` sentences (`greedy`: a greedy search) compiles; for compile=true a
    one-line error says why it cannot, where it cannot. auto compiles where a speed-up was measured:
    greedy search on CPU."""
    setting = compile_setting(setting)
    if setting == "false":
        return False
    reason = unsupported_reason(model, quantization=quantization, shortlist=shortlist)
    if setting == "true":
        if reason is not None:
            raise UserError(f"compile=true cannot be used here: {reason}; use compile=false")
        return True
    return reason is None and greedy and device.type == "cpu" and sentences >= AUTO_MIN_SENTENCES


__all__ = [
    "AUTO_MIN_SENTENCES",
    "COMPILE_SETTINGS",
    "compile_setting",
    "should_compile",
    "unsupported_reason",
    "use_eager_decoding",
    "use_static_decoding",
]

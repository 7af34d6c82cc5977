"""trainer.freeze: parameters a run leaves as they are, chosen by name pattern.

Patterns are shell-style (fnmatch: `*`, `?`, `[...]`) over the names of `model.named_parameters()`,
aliases included: a tied embedding is one tensor under several names (`decoder.embedding.weight`,
`output.weight`, and `encoder.embedding.weight` when all three are shared), and a pattern that names
any of them freezes the tensor, so every name of it. Frozen tensors get `requires_grad=False` before the
optimizer is built, so they never reach it (no Adam state, no weight decay), never get a gradient, and
DistributedDataParallel registers no hook for them: no `find_unused_parameters` is needed.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from seq2seq.errors import UserError

log = logging.getLogger(__name__)

SHOWN_NAMES = 8


@dataclass(frozen=True)
class FrozenParameters:
    """What `freeze_parameters` did: the frozen tensors' names (first name of each) and the counts."""

    names: tuple[str, ...]
    frozen: int  # values (elements) not trained, each shared tensor counted once
    trained: int  # values trained


def _aliases(model: nn.Module) -> dict[int, list[str]]:
    """id(tensor) -> every name it has in `model`, in named_parameters order."""
    names: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), []).append(name)
    return names


def _examples(aliases: dict[int, list[str]]) -> str:
    """A few parameter names, spread over the model (the first of each layer kind is not enough)."""
    names = [name for group in aliases.values() for name in group]
    step = max(1, len(names) // SHOWN_NAMES)
    return ", ".join(names[::step][:SHOWN_NAMES])


def freeze_parameters(model: nn.Module, patterns: Sequence[str] | None) -> FrozenParameters:
    """Set requires_grad=False on every parameter whose name (any of its names) matches one of
    `patterns`; call it before building the optimizer. A pattern that matches nothing is a UserError
    listing example names. Logs how many values are trained and frozen, and the tied names frozen along."""
    patterns = list(patterns or [])
    aliases = _aliases(model)
    tensors = {id(p): p for p in model.parameters()}
    chosen: dict[int, None] = {}
    for pattern in patterns:
        hits = [key for key, names in aliases.items() if any(fnmatch.fnmatchcase(n, pattern) for n in names)]
        if not hits:
            raise UserError(f"trainer.freeze pattern {pattern!r} matches no parameter; names look like "
                            f"{_examples(aliases)} (shell-style patterns: '*embedding*', "
                            "'encoder.*')")  # fmt: skip
        chosen.update(dict.fromkeys(hits))
    for key in chosen:
        tensors[key].requires_grad_(False)
    trained = sum(p.numel() for p in tensors.values() if p.requires_grad)
    total = sum(p.numel() for p in tensors.values())
    result = FrozenParameters(tuple(aliases[key][0] for key in chosen), total - trained, trained)
    if patterns:
        _log(result, [aliases[key] for key in chosen if len(aliases[key]) > 1])
    return result


def _log(result: FrozenParameters, tied: list[list[str]]) -> None:
    log.info("trainer.freeze: %s values trained, %s frozen (tensors frozen: %d, %s)", f"{result.trained:,}",
             f"{result.frozen:,}", len(result.names), ", ".join(result.names[:SHOWN_NAMES]) +
             (" ..." if len(result.names) > SHOWN_NAMES else ""))  # fmt: skip
    for names in tied:
        log.info("trainer.freeze: %s is one tied tensor (shared embeddings): all of its names are frozen",
                 " = ".join(names))  # fmt: skip


def check_frozen(model: nn.Module, optimizer: torch.optim.Optimizer, patterns: Sequence[str] | None) -> None:
    """Refuse a run whose optimizer holds a parameter that `patterns` freeze: the parameters were not
    frozen before the optimizer was built (freeze_parameters), and the run would train them."""
    if not patterns:
        return
    optimized = {id(p) for group in optimizer.param_groups for p in group["params"]}
    for names in _aliases(model).values():
        if any(fnmatch.fnmatchcase(n, pattern) for n in names for pattern in patterns):
            parameter = model.get_parameter(names[0])
            if parameter.requires_grad or id(parameter) in optimized:
                raise UserError(f"trainer.freeze names {names[0]}, but it is trained: call "
                                "seq2seq.train.freezing.freeze_parameters(model, patterns) before "
                                "building the optimizer")  # fmt: skip

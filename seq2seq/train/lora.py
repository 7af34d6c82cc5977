"""trainer.lora: low-rank adapters (LoRA, Hu et al., 2021) trained in place of a model's own weights.

Each linear layer that `targets` names becomes a `LoraLinear`: the same layer (its weight and bias are
the very same tensors, under the same state-dict names) plus two new matrices, A (r, in) and B (out, r),
so that it computes x W^T + b + (alpha / r) · dropout(x) A^T B^T. A starts Kaiming-uniform and B at
zero, so an adapted model computes exactly what it did before its first update.

What trains: with trainer.lora every parameter of the model is frozen but the adapters and the
parameters whose names (any of them, for a tied tensor) match a `train` pattern (shell-style, as
trainer.freeze's: `["*norm*"]`, `["head.*"]`); trainer.freeze then freezes what it names among those.

What a checkpoint holds (`model_state`): "model", the model's own weights under their ordinary names,
and beside it "lora": the settings and the adapters (`<layer>.lora_a`, `<layer>.lora_b`). A resume
restores both exactly (`load_model_state`); every reader of a checkpoint as a model (inference,
averaging, export, init_from) merges the adapters into the weights with seq2seq.checkpoint.model_weights,
W + (alpha / r) · B A, and sees an ordinary model.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.checkpoint import LORA_KEY, Payload, model_weights
from seq2seq.errors import UserError
from seq2seq.nn.dropout import Dropout
from seq2seq.nn.linear import linear

log = logging.getLogger(__name__)

# Without `targets`: the attention's input projections, those the model has (self-attention's fused
# q/k/v `qkv`; an encoder-decoder's cross-attention `q` and fused k/v `kv`).
DEFAULT_TARGETS = ("qkv", "q", "kv")
ADAPTER_NAMES = ("lora_a", "lora_b")  # an adapted layer's new parameters, after its own name
SETTINGS = ("rank", "alpha", "dropout", "targets", "train")
FINGERPRINT_KEYS = tuple(f"trainer.lora.{key}" for key in SETTINGS)  # set only in a LoRA run's fingerprint
SHOWN_NAMES = 8


@dataclass(frozen=True)
class LoraSettings:
    """trainer.lora's keys; these defaults are the one home of theirs (configs/trainer/default.yaml says
    them). `targets` None: DEFAULT_TARGETS, those the model has."""

    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    targets: tuple[str, ...] | None = None
    train: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """Plain values, as a checkpoint and a run's fingerprint hold them."""
        record = dataclasses.asdict(self)
        return {**record, "targets": None if self.targets is None else list(self.targets),
                "train": list(self.train)}  # fmt: skip


def lora_settings(setting: Mapping[str, Any] | None) -> LoraSettings | None:
    """trainer.lora's value, checked and completed with the defaults; None: no LoRA."""
    if setting is None:
        return None
    if not isinstance(setting, Mapping):
        raise UserError(f"trainer.lora={setting!r} must be a mapping such as '{{rank: 8, alpha: 16}}' "
                        "('{}': the defaults) or null")  # fmt: skip
    unknown = sorted(set(setting) - set(SETTINGS))
    if unknown:
        raise UserError(f"trainer.lora has no setting {', '.join(unknown)}; its settings are "
                        f"{', '.join(SETTINGS)}")  # fmt: skip
    values = {**dataclasses.asdict(LoraSettings()), **setting}
    rank, alpha, dropout = values["rank"], values["alpha"], values["dropout"]
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise UserError(f"trainer.lora.rank={rank} must be a whole number of at least 1 (e.g. 8)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        raise UserError(f"trainer.lora.alpha={alpha} must be a positive number (e.g. 16: twice the rank)")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise UserError(f"trainer.lora.dropout={dropout} must be in [0, 1) (e.g. 0.1)")
    targets = None if values["targets"] is None else _names(values["targets"], "targets", "[qkv, q, kv]")
    if targets is not None and not targets:
        raise UserError("trainer.lora.targets=[] adapts nothing; name linear layers, e.g. [qkv, q, kv], "
                        "or leave it out for the attention's input projections")  # fmt: skip
    train = _names(values["train"], "train", '["*norm*"]')
    return LoraSettings(rank, float(alpha), float(dropout), targets, train)


def _names(value: Any, key: str, example: str) -> tuple[str, ...]:
    listed = isinstance(value, Sequence) and not isinstance(value, str)
    if not listed or not all(isinstance(v, str) for v in value):
        raise UserError(f"trainer.lora.{key}={value!r} must be a list of names or shell-style patterns, "
                        f"e.g. {example}")  # fmt: skip
    return tuple(value)


class LoraLinear(nn.Linear):
    """A linear layer with a low-rank adapter: x W^T + b + (alpha / r) · dropout(x) A^T B^T.

    `weight` and `bias` are the adapted layer's own parameters (the same tensors, the same state-dict
    names); `lora_a` (r, in) starts Kaiming-uniform and `lora_b` (out, r) at zero, so the layer starts
    out computing exactly what the layer it adapts did.
    """

    def __init__(self, base: nn.Linear, *, rank: int, alpha: float, dropout: float = 0.0) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight = base.weight
        self.register_parameter("bias", base.bias)
        self.rank, self.alpha, self.scaling = rank, alpha, alpha / rank
        like = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, **like))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, **like))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # nn.Linear's own initialisation
        self.lora_dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Shapes: x (..., in) -> (..., out)."""
        low_rank = F.linear(F.linear(self.lora_dropout(x), self.lora_a), self.lora_b)  # (..., out)
        return linear(x, self.weight, self.bias) + self.scaling * low_rank

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rank={self.rank}, alpha={self.alpha}"


def adapted_layers(model: nn.Module) -> dict[str, LoraLinear]:
    """The model's adapted layers by module name, in model order."""
    return {name: module for name, module in model.named_modules() if isinstance(module, LoraLinear)}


def _matches(name: str, target: str) -> bool:
    """A target names a layer by its own name (`qkv`: every layer called so), by a dotted tail, or by a
    shell-style pattern over the full name (`decoder.*.qkv`)."""
    return name == target or name.endswith(f".{target}") or fnmatch.fnmatchcase(name, target)


def chosen_layers(model: nn.Module, targets: Sequence[str] | None) -> list[str]:
    """The names of the linear layers `targets` name (None: DEFAULT_TARGETS, those the model has); a
    target that names no linear layer is a one-line UserError listing the names there are."""
    linears = [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    own_names = sorted({name.rsplit(".", 1)[-1] for name in linears})
    if targets is None:
        chosen = [name for name in linears if name.rsplit(".", 1)[-1] in DEFAULT_TARGETS]
        if not chosen:
            raise UserError(f"the model has none of trainer.lora's default targets "
                            f"({', '.join(DEFAULT_TARGETS)}); set trainer.lora.targets to some of its "
                            f"linear layers: {', '.join(own_names)}")  # fmt: skip
        return chosen
    for target in targets:
        if not any(_matches(name, target) for name in linears):
            raise UserError(f"trainer.lora.targets: {target!r} matches no linear layer of the model; its "
                            f"linear layers are called {', '.join(own_names)} (a name, or a shell-style "
                            "pattern over the full name such as 'decoder.*.qkv')")  # fmt: skip
    return [name for name in linears if any(_matches(name, target) for target in targets)]


def add_adapters(model: nn.Module, setting: Mapping[str, Any] | None) -> list[str]:
    """Adapt the layers trainer.lora's `setting` names and leave only the adapters (and what its `train`
    patterns name) trainable; call it before building the optimizer. Returns the adapted layers' names
    ([] and nothing changed when `setting` is None)."""
    settings = lora_settings(setting)
    if settings is None:
        return []
    if adapted_layers(model):
        raise UserError("the model has LoRA adapters already; add them once, to a model without them")
    chosen = chosen_layers(model, settings.targets)
    for name in chosen:
        owner_name, _, attribute = name.rpartition(".")
        owner = model.get_submodule(owner_name)
        base = owner.get_submodule(attribute)
        setattr(owner, attribute, LoraLinear(base, rank=settings.rank, alpha=settings.alpha,
                                             dropout=settings.dropout))  # fmt: skip
    _train_only_adapters(model, settings.train)
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    log.info("trainer.lora: %d layers adapted (rank %d, alpha %g): %s; %s values trained, %s frozen",
             len(chosen), settings.rank, settings.alpha, ", ".join(chosen[:SHOWN_NAMES]) +
             (" ..." if len(chosen) > SHOWN_NAMES else ""), f"{trained:,}", f"{frozen:,}")  # fmt: skip
    return chosen


def check_alignment_query(adapted: Sequence[str], alignment_weight: float) -> None:
    """Guided alignment computes its head's attention from the cross-attention query projection's own
    weight (CrossAttention.head_probabilities), past any adapter of it: a run with both is refused."""
    bypassed = [name for name in adapted if name.endswith(".cross_attn.q")]
    if alignment_weight and bypassed:
        raise UserError(f"loss.alignment_weight={alignment_weight} trains a cross-attention head from its "
                        f"query projection's own weight, past trainer.lora's adapter of {bypassed[0]}; leave "
                        "q out of trainer.lora.targets (e.g. [qkv, kv, out]) or set "
                        "loss.alignment_weight=0")  # fmt: skip


def _train_only_adapters(model: nn.Module, patterns: Sequence[str]) -> None:
    """requires_grad only for the adapters and the parameters a pattern names (any name of a tied one)."""
    aliases: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(parameter), []).append(name)
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(n, pattern) for names in aliases.values() for n in names):
            examples = [names[0] for names in aliases.values()][:: max(1, len(aliases) // SHOWN_NAMES)]
            raise UserError(f"trainer.lora.train pattern {pattern!r} matches no parameter; names look like "
                            f"{', '.join(examples[:SHOWN_NAMES])}")  # fmt: skip
    adapters = {id(p) for layer in adapted_layers(model).values() for p in (layer.lora_a, layer.lora_b)}
    for key, names in aliases.items():
        named = any(fnmatch.fnmatchcase(n, pattern) for n in names for pattern in patterns)
        model.get_parameter(names[0]).requires_grad_(key in adapters or named)


def check_adapters(model: nn.Module, setting: Mapping[str, Any] | None) -> None:
    """Refuse a model whose adapters are not those trainer.lora's `setting` adds (none without one)."""
    settings, layers = lora_settings(setting), adapted_layers(model)
    if settings is None and layers:
        raise UserError("the model has LoRA adapters but trainer.lora is null; pass the trainer.lora they "
                        "were added with")  # fmt: skip
    if settings is not None and not layers:
        raise UserError("trainer.lora is set but the model has no adapters: call seq2seq.train.lora."
                        "add_adapters(model, lora) before building the optimizer")  # fmt: skip
    for name, layer in layers.items():
        own = (layer.rank, layer.alpha, layer.lora_dropout.p)
        if own != (settings.rank, settings.alpha, settings.dropout):
            raise UserError(f"the adapter of {name} has rank {own[0]}, alpha {own[1]} and dropout {own[2]}, "
                            "not trainer.lora's; add the adapters with trainer.lora's settings")  # fmt: skip


def model_state(model: nn.Module, setting: Mapping[str, Any] | None = None) -> Payload:
    """What a checkpoint holds of `model`: {"model": its own weights, by their ordinary names}, and with
    adapters "lora": their rank, alpha and dropout, trainer.lora's targets and train when `setting` gives
    them, and the adapters ("adapters": {"<layer>.lora_a": A, "<layer>.lora_b": B})."""
    state = model.state_dict()
    layers = adapted_layers(model)
    if not layers:
        return {"model": state}
    keys = {f"{name}.{part}" for name in layers for part in ADAPTER_NAMES}
    first = next(iter(layers.values()))
    record = {"rank": first.rank, "alpha": first.alpha, "dropout": first.lora_dropout.p}
    settings = lora_settings(setting)
    if settings is not None:
        record = settings.record()
    adapters = {key: value for key, value in state.items() if key in keys}
    return {"model": {key: value for key, value in state.items() if key not in keys},
            LORA_KEY: {**record, "adapters": adapters}}  # fmt: skip


def _show(record: Any) -> str:
    """A setting as the command line writes it: {rank: 8, ..., targets: null, train: []}."""
    if record is None:
        return "null"
    if isinstance(record, Mapping):
        return "{" + ", ".join(f"{key}: {_show(record.get(key))}" for key in SETTINGS) + "}"
    if isinstance(record, (list, tuple)):
        return "[" + ", ".join(map(str, record)) + "]"
    return str(record)


def load_model_state(model: nn.Module, payload: Payload, setting: Mapping[str, Any] | None) -> None:
    """Restore what `model_state` saved into `model` (which has the adapters `setting` adds), strictly: a
    checkpoint of other trainer.lora settings is a one-line UserError."""
    saved = payload.get(LORA_KEY)
    current = None if setting is None else lora_settings(setting).record()
    saved_settings = None if saved is None else {key: saved.get(key) for key in SETTINGS}
    if saved_settings != current:
        raise UserError(f"it was trained with trainer.lora={_show(saved_settings)}, this run has "
                        f"trainer.lora={_show(current)}")  # fmt: skip
    model.load_state_dict({**payload["model"], **({} if saved is None else saved["adapters"])})


@torch.no_grad()
def load_merged_weights(model: nn.Module, payload: Payload) -> None:
    """Load a checkpoint's model as every reader sees it (model_weights: any adapters merged into the
    weights) into `model`; a model with adapters gets them zeroed (B = 0), so that it computes the merged
    model. What the end of a run scores (averages, best.pt, tuned decoding) is so the model translated."""
    adapters: dict[str, Tensor] = {}
    for name, layer in adapted_layers(model).items():
        adapters[f"{name}.lora_a"] = layer.lora_a.detach()
        adapters[f"{name}.lora_b"] = torch.zeros_like(layer.lora_b)
    model.load_state_dict({**model_weights(payload), **adapters})

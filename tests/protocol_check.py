"""Whether a class implements a typing.Protocol for real: every member present on an instance
(runtime_checkable isinstance), every method with the protocol's parameters (names, kinds and defaults),
every property a value of the type the protocol declares. isinstance alone checks only names."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints


def protocol_methods(protocol: type) -> list[str]:
    """The protocol's own methods (its properties apart)."""
    return sorted(
        name for name, value in vars(protocol).items() if inspect.isfunction(value) and name[0] != "_"
    )


def protocol_properties(protocol: type) -> dict[str, Any]:
    """The protocol's properties, each with the type its getter returns."""
    return {
        name: get_type_hints(value.fget)["return"]
        for name, value in vars(protocol).items()
        if isinstance(value, property)
    }


def parameters(function: Any) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of each parameter."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def mismatches(instance: Any, protocol: type) -> list[str]:
    """What `instance` lacks or gets wrong of `protocol`, in words ([] when it implements it)."""
    problems = [] if isinstance(instance, protocol) else [f"not an instance of {protocol.__name__}"]
    for name in protocol_methods(protocol):
        ours, theirs = parameters(getattr(protocol, name)), parameters(getattr(type(instance), name))
        if ours != theirs:
            problems.append(f"{name}{[p[0] for p in theirs]} differs from {name}{[p[0] for p in ours]}")
    for name, kind in protocol_properties(protocol).items():
        if not isinstance(getattr(instance, name), kind):
            problems.append(f"{name} is {getattr(instance, name)!r}, not a {kind.__name__}")
    return problems

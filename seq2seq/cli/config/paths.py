"""Paths in a command's settings: relative to the directory the command was run in (Hydra may run a
command elsewhere), or - for stdin / stdout."""

from __future__ import annotations

from typing import Any

import hydra


def absolute(value: Any) -> str:
    """A path setting as an absolute path; - (stdin / stdout) as it is."""
    text = str(value)
    return text if text == "-" else hydra.utils.to_absolute_path(text)


__all__ = ["absolute"]

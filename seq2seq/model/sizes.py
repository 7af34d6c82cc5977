"""Named model configurations, read from the `model` config group (configs/model/<name>.yaml).

Those YAML files are the one place model defaults and sizes are written: base.yaml holds every
setting, the other sizes are diffs on top of it. Benchmarks, tests and library users ask for a named
size here instead of keeping a copy of the numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from seq2seq.errors import UserError

SIZE_KEYS = ("d_model", "n_heads", "ffn_dim", "encoder_layers", "decoder_layers", "layers")


def model_config_dir() -> Path:
    """configs/model in a source checkout, or the copy an installed wheel carries as package data."""
    package_dir = Path(__file__).resolve().parents[1]
    for candidate in (package_dir.parent / "configs" / "model", package_dir / "configs" / "model"):
        if (candidate / "base.yaml").is_file():
            return candidate
    raise UserError(f"no configs/model directory found next to {package_dir}; reinstall the package")


def size_names() -> list[str]:
    """The options of the `model` config group, e.g. ['base', 'big', 'small', 'tiny']."""
    return sorted(path.stem for path in model_config_dir().glob("*.yaml"))


def _resolved(name: str) -> dict[str, Any]:
    """configs/model/<name>.yaml merged over the entries of its defaults list from the same group, as a
    plain dict (interpolations left unresolved, so the next merge still sees them).

    Entries outside the group (the `/schema/model` type declarations) carry no values and are skipped.
    OmegaConf only reads and merges the YAML here: no config object leaves this module.
    """
    path = model_config_dir() / f"{name}.yaml"
    if not path.is_file():
        raise UserError(f"model size {name!r} does not exist; choose one of {', '.join(size_names())}")
    own = OmegaConf.load(path)
    defaults = list(own.pop("defaults", []))
    if "_self_" not in defaults:
        defaults.append("_self_")
    merged = OmegaConf.create()
    for entry in defaults:
        if entry == "_self_":
            merged = OmegaConf.merge(merged, own)
        elif isinstance(entry, str) and not entry.startswith("/"):
            merged = OmegaConf.merge(merged, _resolved(entry))
    return OmegaConf.to_container(merged)  # type: ignore[return-value]  # a mapping: a dict


def model_config(name: str) -> dict[str, Any]:
    """Every `build_model` argument the named config sets (vocabulary sizes and pad_id come at run time)."""
    resolved = OmegaConf.to_container(OmegaConf.create(_resolved(name)), resolve=True)
    config: dict[str, Any] = dict(resolved)  # type: ignore[arg-type]  # a mapping: a dict
    config.pop("_target_", None)
    return config


def model_size(name: str) -> dict[str, int]:
    """The named size's dimensions and depths: d_model, n_heads, ffn_dim, and encoder_layers and
    decoder_layers (encoder-decoder) or layers (decoder-only)."""
    config = model_config(name)
    return {key: config[key] for key in SIZE_KEYS if key in config}

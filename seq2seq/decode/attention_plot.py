"""Cross-attention heat maps: source pieces on the x axis, target pieces on the y axis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def attention_figure(
    weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str], *, title: str = ""
) -> Any:
    """A matplotlib figure of one sentence's attention.

    Shapes: weights (T, S) — rows are target tokens, columns source tokens (already averaged over heads).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, cols = weights.shape
    figure, axes = plt.subplots(figsize=(max(4.0, 0.35 * cols + 2), max(3.0, 0.35 * rows + 1.5)))
    axes.imshow(weights.float().cpu().numpy(), cmap="viridis", aspect="auto", vmin=0.0)
    axes.set_xticks(range(cols), labels=src_pieces[:cols], rotation=90, fontsize=8)
    axes.set_yticks(range(rows), labels=tgt_pieces[:rows], fontsize=8)
    axes.set_xlabel("source")
    axes.set_ylabel("target")
    if title:
        axes.set_title(title, fontsize=9)
    figure.tight_layout()
    return figure


def save_attention_png(
    path: Path, weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str]
) -> None:
    import matplotlib.pyplot as plt

    figure = attention_figure(weights, src_pieces, tgt_pieces)
    figure.savefig(path, dpi=100)
    plt.close(figure)

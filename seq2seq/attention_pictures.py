"""Cross-attention heat maps: source pieces on the x axis, target pieces on the y axis.

Pictures of a model's attention, drawn with matplotlib (imported only when a picture is drawn): the
TensorBoard picture of training's validation and seq2seq-translate's attention_dir= both draw them, so
the module sits below train and inference, beside metrics.py, and not in the search package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def column_labels(src_pieces: list[str], stride: int) -> list[str]:
    """One label per attention column: the pieces a pooled memory position averages (cross_downsample),
    joined, e.g. stride 2: ["▁In", "▁the", "▁beginning"] -> ["▁In▁the", "▁beginning"]."""
    return ["".join(src_pieces[start : start + stride]) for start in range(0, len(src_pieces), stride)]


def attention_figure(
    weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str], *, title: str = ""
) -> Any:
    """A matplotlib figure of one sentence's attention.

    Shapes: weights (T, S') — rows are target tokens, columns (pooled) source positions, averaged over
    heads; `src_pieces` has one label per column (see column_labels).
    """
    if len(src_pieces) != weights.shape[1]:
        raise ValueError(f"{len(src_pieces)} source labels for {weights.shape[1]} attention columns")
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

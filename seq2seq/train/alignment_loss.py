"""Guided alignment: one cross-attention head taught to follow external word alignments (Garg et al.
2019; Marian's and OpenNMT-py's guided alignment), as a pure function of the head's weights and links.

Each target position's links are spread evenly over the source positions it is linked to; the loss is
the cross-entropy of the head's weights against that distribution, summed over the linked target
positions (a position with no link adds nothing). The objective adds it, times
`loss.alignment_weight`, to the token loss's sum, so both are averaged over the same target tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

# log(0) guard: a linked source position the head gives no weight costs -log(1e-9) ~ 20.7, not inf.
_FLOOR = 1e-9


def alignment_targets(links: Tensor, shape: tuple[int, int, int]) -> Tensor:
    """The per-row distributions the head should match: links (row, target position, source position)
    spread evenly over each target position's linked sources; rows without a link are all zero.

    Shapes: links (L, 3) int64 -> (B, T, S) float32
    """
    targets = torch.zeros(shape, dtype=torch.float32, device=links.device)  # (B, T, S)
    if links.numel():
        targets[links[:, 0], links[:, 1], links[:, 2]] = 1.0
    return targets / targets.sum(-1, keepdim=True).clamp(min=1.0)


def guided_alignment_loss(weights: Tensor, links: Tensor) -> Tensor:
    """-sum_{b,t,s} A[b,t,s] log W[b,t,s], A = alignment_targets(links), W = the head's weights.

    Shapes: weights (B, T, S) float, each row a distribution over the source; links (L, 3) -> 0-dim
    float32 sum (with the graph of `weights`)
    """
    targets = alignment_targets(links, tuple(weights.shape))  # (B, T, S)
    return -(targets * weights.float().clamp(min=_FLOOR).log()).sum()

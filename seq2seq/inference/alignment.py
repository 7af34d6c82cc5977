"""Word alignment between a source and its translation, from the model itself: each target token linked
to the source token its cross-attention weighs most (one layer; the mean of its heads, or one head).
What seq2seq-translate's alignment=true writes and what puts markup back (seq2seq.inference.markup_text);
which layer and head both read, one rule decides (alignment_position).
An engine without cross-attention weights (an ensemble, CTranslate2) gets the proportional alignment,
which links each target token to the source token at the same relative position."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor

from seq2seq.decode.search import pad_batch


@runtime_checkable
class CrossAttending(Protocol):
    """What alignments ask of a model: one model's cross-attention weights (Seq2Seq; a DecoderOnly model
    has the method and refuses with a UserError; an ensemble or an export has none)."""

    config: dict[str, Any]

    def cross_attention(self, src: Tensor, tgt_in: Tensor, *, layer: int = -1) -> Tensor:
        """Shapes: src (B, S), tgt_in (B, T) -> (B, H, T, S') weights of decoder layer `layer`."""
        ...


def alignment_position(
    model_config: Mapping[str, Any], *, layer: int | None = None, head: int | None = None
) -> tuple[int, int | None]:
    """(decoder layer, head or None for the mean of its heads) whose cross-attention an alignment reads:
    the one rule for alignment=true, attention pictures and markup placement. `layer` / `head` given (the
    attention_layer / attention_head settings): those, the unnamed layer by the rule below. Else a model
    trained with guided alignment reads its alignment head (model.alignment_layer, alignment_head), and
    any other model the mean of the heads of its next-to-last decoder layer (the last, with one layer):
    of every layer, and of every single head, it agreed best with eflomal on the Bible test set
    (benchmarks/alignment_layers.py; docs/studies/alignment-layers.md)."""
    if layer is None and head is None and model_config.get("alignment_layer") is not None:
        trained = model_config.get("alignment_head")
        return int(model_config["alignment_layer"]), None if trained is None else int(trained)
    if layer is None:
        layer = -2 if int(model_config.get("decoder_layers", 1)) >= 2 else -1
    return int(layer), None if head is None else int(head)


@torch.inference_mode()
def attention_weights(
    model: CrossAttending,
    source: list[int],
    output: list[int],
    *,
    pad_id: int,
    bos_id: int,
    device: torch.device,
    layer: int = -1,
    head: int | None = None,
) -> Tensor:
    """Cross-attention of `output` (the tokens the search wrote, without eos) over `source` (ending in
    eos): decoder layer `layer`, the mean of its heads or head `head`.
    Shapes: -> (len(output) + 1, S'), the last row the eos step's."""
    src = pad_batch([source], pad_id).to(device)  # (1, S)
    tgt_in = pad_batch([[bos_id] + list(output)], pad_id).to(device)  # (1, T)
    weights = model.cross_attention(src, tgt_in, layer=layer)[0].float()  # (H, T, S')
    return weights.mean(0) if head is None else weights[head]  # (T, S')


def argmax_links(
    weights: Tensor, length: int, stride: int, *, codes: tuple[int, int]
) -> list[tuple[int, int]]:
    """(source token, target token) pairs, each of the `length` target tokens with its most attended
    source position, both counted without their leading language codes (a token attending most to a
    code gets no pair). `stride`: source positions per cross-attention column (memory downsampling).
    Shapes: weights (T, S'), T >= length."""
    return column_links(weights[:length].argmax(-1).tolist(), stride, codes=codes)


def column_links(columns: list[int], stride: int, *, codes: tuple[int, int]) -> list[tuple[int, int]]:
    """argmax_links from each target token's most attended column (`columns`, one per target token)."""
    source_codes, target_codes = codes
    pairs = [(s * stride - source_codes, t) for t, s in enumerate(columns[target_codes:])]
    return [(s, t) for s, t in pairs if s >= 0]


@torch.inference_mode()
def most_attended(
    model: CrossAttending,
    pairs: list[tuple[list[int], list[int]]],
    *,
    pad_id: int,
    bos_id: int,
    device: torch.device,
    layer: int = -1,
    head: int | None = None,
    batch_size: int = 64,
) -> list[list[int]]:
    """Per (source, output) pair (source ending in eos, output without eos), each output token's most
    attended source column under the mean of layer `layer`'s heads (or head `head`): `attention_weights`
    for many pairs, in padded batches."""
    columns: list[list[int]] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        src = pad_batch([source for source, _ in chunk], pad_id).to(device)  # (B, S)
        tgt_in = pad_batch([[bos_id, *output] for _, output in chunk], pad_id).to(device)  # (B, T)
        weights = model.cross_attention(src, tgt_in, layer=layer).float()  # (B, H, T, S')
        weights = weights.mean(1) if head is None else weights[:, head]  # (B, T, S')
        best = weights.argmax(-1).tolist()  # (B, T)
        columns.extend(row[: len(output)] for row, (_, output) in zip(best, chunk))
    return columns


def proportional_links(sources: int, targets: int) -> list[tuple[int, int]]:
    """Each target token linked to the source token at the same relative position."""
    if sources == 0:
        return []
    return [(min(sources - 1, (2 * t + 1) * sources // (2 * targets)), t) for t in range(targets)]

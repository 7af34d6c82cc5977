"""Alignments and attention pictures (seq2seq-translate's alignment=true, attention_dir=): each
translation's argmax cross-attention over its source, and its heat map, from one PyTorch model.
`AttentionOutput` holds the settings: what is asked for and which attention is read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.attention_pictures import column_labels, save_attention_png
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.errors import UserError
from seq2seq.inference.alignment import CrossAttending, alignment_position, argmax_links, attention_weights
from seq2seq.inference.languages import forced_codes, without_language_code
from seq2seq.inference.prepared import Prepared
from seq2seq.inference.translator import Translator


@dataclass(frozen=True)
class AttentionOutput:
    """`alignment`: the alignment column; `pictures`: a directory for one heat map per sentence (None:
    none); `layer` / `head`: the attention read (None: seq2seq.inference.alignment.alignment_position's
    rule, the one markup placement uses too)."""

    alignment: bool = False
    pictures: Path | None = None
    layer: int | None = None
    head: int | None = None

    @property
    def asked(self) -> bool:
        return self.alignment or self.pictures is not None


def alignments_and_pictures(
    settings: AttentionOutput,
    translator: Translator,
    sources: list[list[int]],
    results: list[list[Hypothesis]],
) -> list[str | None]:
    """Argmax cross-attention alignments ("src-tgt" pairs) and optional heat maps, one sentence at a time."""
    out: list[str | None] = [None] * len(sources)
    picture_dir = settings.pictures
    if picture_dir is not None:
        picture_dir.mkdir(parents=True, exist_ok=True)
    model, device = translator.model, translator.device
    stride = int(model.config.get("cross_downsample", 1))
    tokenizer = translator.tgt_tokenizer
    layer, head = attention_position(settings, model)
    for index, (source, nbest) in enumerate(zip(sources, results)):
        if not nbest:
            out[index] = ""
            continue
        hypothesis = list(nbest[0].tokens)
        weights = attention_weights(
            model,
            source,
            hypothesis,
            pad_id=tokenizer.pad_id,
            bos_id=tokenizer.bos_id,
            device=device,
            layer=layer,
            head=head,
        )  # (T, S')
        links = argmax_links(weights, len(hypothesis), stride, codes=language_codes(translator, nbest[0]))
        out[index] = " ".join(f"{s}-{t}" for s, t in links)
        if picture_dir is not None:
            src_pieces = column_labels([translator.src_tokenizer.id_to_piece(i) for i in source], stride)
            tgt_pieces = [tokenizer.id_to_piece(i) for i in hypothesis] + ["</s>"]
            save_attention_png(picture_dir / f"{index + 1:06d}.png", weights, src_pieces, tgt_pieces)
    return out


def attention_position(settings: AttentionOutput, model: CrossAttending) -> tuple[int, int | None]:
    """(layer, head or None for their mean) that alignments and pictures read: attention_layer and
    attention_head, else what markup placement reads too (seq2seq.inference.alignment.alignment_position)."""
    return alignment_position(model.config, layer=settings.layer, head=settings.head)


def language_codes(translator: Translator, hypothesis: Hypothesis) -> tuple[int, int]:
    """How many language-code tokens lead the source (M2M100/NLLB's source code, OPUS-MT's >>xx<<) and
    the hypothesis (the target code every search forces): they are no words, and do not count."""
    codes = forced_codes(translator.src_tokenizer, translator.tgt_tokenizer)
    forced = len(hypothesis.tokens) - len(without_language_code(hypothesis, codes).tokens)
    return len(translator.src_tokenizer.prefix), forced


def check_attention_settings(settings: AttentionOutput, translator: Translator) -> None:
    """Refuse alignment=/attention_dir= before the search, not after it: they need one PyTorch model with
    cross-attention (a one-token probe lets the model refuse by itself: a decoder-only model has none),
    and attention_layer / attention_head must name one of its layers / heads."""
    model = translator.model
    if not isinstance(model, CrossAttending):
        raise UserError(
            f"alignment and attention_dir need one PyTorch model, not engine={translator.engine.name} "
            "or an ensemble; pass a single .pt checkpoint"
        )
    (layer, head), tokenizer = attention_position(settings, model), translator.tgt_tokenizer
    src = torch.tensor([[tokenizer.eos_id]], device=translator.device)  # (1, 1)
    tgt_in = torch.tensor([[tokenizer.bos_id]], device=translator.device)  # (1, 1)
    try:
        with torch.no_grad():
            heads = model.cross_attention(src, tgt_in, layer=layer).shape[1]  # (1, H, 1, 1)
    except IndexError:
        layers = int(model.config.get("decoder_layers", 0))
        raise UserError(f"attention_layer={layer} is not a decoder layer of this model ({layers} layers); "
                        f"use 0 to {layers - 1}, or -1 for the last") from None  # fmt: skip
    if head is not None and not -heads <= head < heads:
        raise UserError(f"attention_head={head} is not a head of this model ({heads} heads); "
                        f"use 0 to {heads - 1}, or null for their mean")  # fmt: skip


def text_alignments(
    settings: AttentionOutput, translator: Translator, encoded: Prepared, results: list[list[Hypothesis]]
) -> list[str | None]:
    """Per text, its pieces' alignments joined with spaces (None unless alignment or attention_dir is
    set; the pictures are saved on the way)."""
    if not settings.asked:
        return [None] * encoded.n_texts
    pieces: list[list[str]] = [[] for _ in range(encoded.n_texts)]
    for owner, alignment in zip(
        encoded.owners, alignments_and_pictures(settings, translator, encoded.sources, results)
    ):
        pieces[owner].append(alignment or "")
    return [" ".join(p for p in parts if p) for parts in pieces]

"""Guided alignment training's settings (`loss.alignment_weight`, `data.alignment`,
`model.alignment_layer`, `model.alignment_head`), checked and completed before a run touches anything."""

from __future__ import annotations

import logging

from omegaconf import DictConfig, open_dict

from seq2seq.errors import UserError
from seq2seq.model.families import ENCODER_DECODER

log = logging.getLogger(__name__)


def check_guided_alignment(cfg: DictConfig, family: str) -> float:
    """loss.alignment_weight, checked: a weight above 0 needs an encoder-decoder model whose memory is not
    pooled and data.alignment=true; an unset alignment head becomes head 0 of the next-to-last decoder
    layer (the last with one layer), written into cfg.model so the checkpoint records it."""
    weight = float(cfg.loss.get("alignment_weight", 0.0) or 0.0)
    if weight < 0:
        raise UserError(f"loss.alignment_weight={weight} must be 0 (off) or positive (e.g. 0.05)")
    if not weight:
        if cfg.data.get("alignment", False):
            log.warning("data.alignment=true but loss.alignment_weight=0: the word links are not used")
        return weight
    if family != ENCODER_DECODER:
        raise UserError(f"loss.alignment_weight={weight} trains a cross-attention head, which only "
                        "encoder-decoder models have; set loss.alignment_weight=0")  # fmt: skip
    if not cfg.data.get("alignment", False):
        raise UserError(f"loss.alignment_weight={weight} needs word links: add data.alignment=true "
                        "(eflomal aligns the corpus at prepare time: pip install 'seq2seq[alignment]')")  # fmt: skip
    if int(cfg.model.get("cross_downsample", 1)) != 1:
        raise UserError(f"loss.alignment_weight={weight} needs cross-attention over every source token; "
                        "set model.cross_downsample=1")  # fmt: skip
    if cfg.model.get("alignment_layer") is None and cfg.model.get("alignment_head") is None:
        with open_dict(cfg):
            cfg.model.alignment_layer = -2 if int(cfg.model.decoder_layers) >= 2 else -1
            cfg.model.alignment_head = 0
        log.info("guided alignment trains head %d of decoder layer %d (model.alignment_head, "
                 "model.alignment_layer)", cfg.model.alignment_head, cfg.model.alignment_layer)  # fmt: skip
    return weight

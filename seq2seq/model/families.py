"""The names of the three Transformer families: the value of a model's `family` attribute and of the
`family` key its checkpoint records. Code that asks which family a model is compares with these."""

from __future__ import annotations

ENCODER_DECODER = "encoder_decoder"
DECODER_ONLY = "decoder_only"
ENCODER_ONLY = "encoder_only"
FAMILIES = (ENCODER_DECODER, DECODER_ONLY, ENCODER_ONLY)
TRANSLATING_FAMILIES = (ENCODER_DECODER, DECODER_ONLY)  # the ones a search can drive (encoder-only scores)

"""The Transformer families: encoder-decoder, decoder-only and encoder-only. One concept per module:

families.py      the family names (ENCODER_DECODER, DECODER_ONLY, ENCODER_ONLY): constants, in one place
transformer.py   Encoder, Decoder, Seq2Seq (forward / encode / init_state / decode_step), PositionScheme
decoder_only.py  DecoderOnly: one causal or prefix-LM stack over `source <tag> target`, the same surface
encoder_only.py  EncoderOnly: a bidirectional stack over `source </s> translation`, pooled: quality estimation
builders.py      build_model, build_decoder_only, build_encoder_only (configs/model's `_target_`s): validate
                 their arguments and wire built parts into layers, stacks and the model;
                 build_from_config (a checkpoint's model, by its recorded family); count_parameters
argument_checks.py  the builders' one-line refusals of impossible settings (validate_arguments)
sizes.py        named configurations read from configs/model/*.yaml: model_size("small"), model_config
"""

from seq2seq.model.argument_checks import check_embedding_sharing
from seq2seq.model.builders import (
    FAMILY_BUILDERS,
    build_decoder_only,
    build_encoder_only,
    build_from_config,
    build_model,
    count_parameters,
    family_of,
)
from seq2seq.model.decoder_only import DecoderOnly
from seq2seq.model.encoder_only import EncoderOnly
from seq2seq.model.families import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY, FAMILIES, TRANSLATING_FAMILIES
from seq2seq.model.sizes import model_config, model_size, size_names
from seq2seq.model.transformer import EncoderOutput, Seq2Seq

__all__ = [
    "DECODER_ONLY",
    "ENCODER_DECODER",
    "ENCODER_ONLY",
    "FAMILIES",
    "FAMILY_BUILDERS",
    "TRANSLATING_FAMILIES",
    "DecoderOnly",
    "EncoderOnly",
    "EncoderOutput",
    "Seq2Seq",
    "build_decoder_only",
    "build_encoder_only",
    "build_from_config",
    "build_model",
    "check_embedding_sharing",
    "count_parameters",
    "family_of",
    "model_config",
    "model_size",
    "size_names",
]

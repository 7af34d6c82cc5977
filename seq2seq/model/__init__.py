"""The Transformer families: encoder-decoder and decoder-only. One concept per module:

transformer.py   Encoder, Decoder, Seq2Seq (forward / encode / init_state / decode_step), PositionScheme
decoder_only.py  DecoderOnly: one causal or prefix-LM stack over `source <tag> target`, the same surface
builders.py      build_model and build_decoder_only (the Hydra `_target_`s of configs/model): validate
                 their arguments and wire built parts into layers, stacks and the model;
                 build_from_config (a checkpoint's model, by its recorded family); count_parameters
sizes.py        named configurations read from configs/model/*.yaml: model_size("small"), model_config
"""

from seq2seq.model.builders import (
    FAMILY_BUILDERS,
    build_decoder_only,
    build_from_config,
    build_model,
    check_embedding_sharing,
    count_parameters,
    family_of,
)
from seq2seq.model.decoder_only import DecoderOnly
from seq2seq.model.sizes import model_config, model_size, size_names
from seq2seq.model.transformer import EncoderOutput, Seq2Seq

__all__ = [
    "FAMILY_BUILDERS",
    "DecoderOnly",
    "EncoderOutput",
    "Seq2Seq",
    "build_decoder_only",
    "build_from_config",
    "build_model",
    "check_embedding_sharing",
    "count_parameters",
    "family_of",
    "model_config",
    "model_size",
    "size_names",
]

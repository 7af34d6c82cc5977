"""The encoder-decoder Transformer. One concept per module:

transformer.py  Encoder, Decoder, Seq2Seq (forward / encode / init_state / decode_step), PositionScheme
builders.py     build_model (the Hydra `_target_` of configs/model): validates its arguments and wires
                built parts into layers, stacks and the model; check_embedding_sharing; count_parameters
sizes.py        named configurations read from configs/model/*.yaml: model_size("small"), model_config
"""

from seq2seq.model.builders import build_model, check_embedding_sharing, count_parameters
from seq2seq.model.sizes import model_config, model_size, size_names
from seq2seq.model.transformer import EncoderOutput, Seq2Seq

__all__ = [
    "EncoderOutput",
    "Seq2Seq",
    "build_model",
    "check_embedding_sharing",
    "count_parameters",
    "model_config",
    "model_size",
    "size_names",
]

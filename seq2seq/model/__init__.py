"""The encoder-decoder Transformer and its builders."""

from seq2seq.model.builders import SIZES, build_model, count_parameters
from seq2seq.model.transformer import EncoderOutput, Seq2Seq

__all__ = ["SIZES", "EncoderOutput", "Seq2Seq", "build_model", "count_parameters"]

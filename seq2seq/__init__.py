"""seq2seq: a modular Transformer translation framework."""

from seq2seq.errors import UserError

__all__ = ["UserError"]
__version__ = "0.1.0"

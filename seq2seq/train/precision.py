"""Kept for code that imports `seq2seq.train.precision`: the precisions live in seq2seq.precision now."""

from seq2seq.precision import fast_bf16, resolve_precision

__all__ = ["fast_bf16", "resolve_precision"]

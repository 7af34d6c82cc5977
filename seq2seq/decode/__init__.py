"""Decoding (greedy, beam, sampling) and corpus scoring with sacreBLEU."""

from seq2seq.decode.beam import beam_search
from seq2seq.decode.common import Hypothesis, Prefix
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.penalties import length_penalty, no_repeat_ngram_allowed, top_k_top_p_filter
from seq2seq.decode.sampling import sampling_search
from seq2seq.decode.score import score_corpus

__all__ = [
    "Hypothesis",
    "Prefix",
    "beam_search",
    "greedy_search",
    "length_penalty",
    "no_repeat_ngram_allowed",
    "sampling_search",
    "score_corpus",
    "top_k_top_p_filter",
]

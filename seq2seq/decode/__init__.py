"""Decoding and scoring. One concept per module:

options.py      SearchOptions: every search setting, in one object (the `decode` config group)
common.py       Hypothesis, the per-step rules (length limits, n-gram blocking, forced prefixes)
penalties.py    pure functions those rules use: length penalty, limits, n-gram blocking, top-k/top-p
greedy.py       greedy search, and the single-path loop it shares with sampling
sampling.py     temperature / top-k / nucleus sampling, seeded
beam.py         batched beam search with in-place KV-cache reordering
constraints.py  lexical constraints as tensors: each row's progress on its phrases, banks, avoided phrases
constrained.py  constrained beam search: outputs that contain given phrases (dynamic beam allocation)
constraint_input.py  phrases as users give them (text per line) turned into checked target tokens
glossary.py     a TSV glossary: source terms found in a sentence become constraints on its translation
spaceless.py    scripts written without spaces (Chinese, Japanese, Thai, ...), where words meet without a mark
search.py       search(): the search a SearchOptions describes; search_ids(): many sentences, batched
loading.py      a model and its tokenizers rebuilt from a checkpoint file alone
ensemble.py     several models searched as one (mean log-probabilities, each with its own cache)
engines.py      what a Translator searches with: our PyTorch search, or CTranslate2 on an exported model
compiled.py     compiled decoding: the decoder step as one torch.compile graph over static KV caches
exported.py     reading a model directory written by seq2seq-export
tuned.py        a model's own decoding settings (length_penalty, max_len_a) stored with its weights
confidence.py   per-token probabilities and sentence confidence of a translation
rerank.py       a QE model's score on every hypothesis, and n-best lists re-ranked by it
pair_filter.py  TranslationScoreFilter: a cleaning transform that drops pairs a model finds unlikely
shortlist.py    vocabulary shortlists: a lexical table, and each batch's output projection on its candidates
teacher_forcing.py  the model's own log-probabilities of found outputs (confidence under a shortlist)
translator.py   Translator: the Python API (load once; texts in, translations out; the CLI's input policy)
text_input.py   reading text to translate or score (file or stdin, strict or lenient UTF-8)
score.py        BLEU, chrF and TER with sacreBLEU signatures
attention_plot.py  cross-attention heat maps
"""

from seq2seq.decode.beam import beam_search
from seq2seq.decode.common import Hypothesis, Prefix
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.penalties import length_penalty, no_repeat_ngram_allowed, top_k_top_p_filter
from seq2seq.decode.sampling import sampling_search
from seq2seq.decode.score import score_corpus
from seq2seq.decode.search import search, search_ids

__all__ = [
    "Hypothesis",
    "Prefix",
    "SearchOptions",
    "beam_search",
    "greedy_search",
    "length_penalty",
    "no_repeat_ngram_allowed",
    "sampling_search",
    "score_corpus",
    "search",
    "search_ids",
    "top_k_top_p_filter",
]

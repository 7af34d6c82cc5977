"""Search: what turns a model's next-token scores into outputs. It talks to any family, and to an
ensemble of them, through the SearchableModel protocol only (an exported model is searched by CTranslate2
behind seq2seq.inference.engines.Engine). One concept per module:

searchable.py   SearchableModel: the protocol every searched model implements (families, Ensemble);
                StaticStepping: a model whose step compiled decoding compiles
options.py      SearchOptions: every search setting, in one object (the `decode` config group)
hypotheses.py   what goes in and comes out: special ids, prefixes, the stop check, Hypothesis
step_rules.py   the per-step rules: length limits, n-gram blocking, forced prefixes, avoided phrases
penalties.py    pure functions those rules use: length penalty, limits, n-gram blocking, top-k/top-p
greedy.py       greedy search, and the single-path loop it shares with sampling
sampling.py     temperature / top-k / nucleus sampling, seeded
beam.py         batched beam search with in-place KV-cache reordering
constraints.py  lexical constraints as tensors: each row's progress on its phrases, banks, avoided phrases
constrained.py  constrained beam search: outputs that contain given phrases (dynamic beam allocation)
spaceless.py    scripts written without spaces (Chinese, Japanese, Thai, ...), where words meet without a mark
search.py       search(): the search a SearchOptions describes; search_ids(): many sentences, batched
ensemble.py     several models searched as one (mean log-probabilities, each with its own cache)
tuned_decoding.py  a model's tuned decoding (length_penalty, max_len_a) stored with its weights
compiled.py     compiled decoding: the decoder step as one torch.compile graph over static KV caches
shortlist.py    vocabulary shortlists: a lexical table, and each batch's output projection on its candidates
teacher_forcing.py  the model's own log-probabilities of found outputs (confidence under a shortlist)
"""

from seq2seq.decode.beam import beam_search
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.hypotheses import Hypothesis, Prefix
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.penalties import length_penalty, no_repeat_ngram_allowed, top_k_top_p_filter
from seq2seq.decode.sampling import sampling_search
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
    "search",
    "search_ids",
    "top_k_top_p_filter",
]

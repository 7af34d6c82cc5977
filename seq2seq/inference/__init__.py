"""The inference layer: what a user calls to translate with a model. One concept per module:

translator.py   Translator: the Python API (load once; texts in, translations out; the CLI's input policy)
engines.py      what a Translator searches with: our PyTorch search, or CTranslate2 on an exported model
loading.py      a model and its tokenizers rebuilt from a checkpoint file alone
exported.py     reading a model directory written by seq2seq-export
confidence.py   per-token probabilities and sentence confidence of a translation
rerank.py       a QE model's score on every hypothesis, and n-best lists re-ranked by it
text_input.py   reading text to translate or score (file or stdin, strict or lenient UTF-8)
constraint_input.py  phrases as users give them (text per line) turned into checked target tokens
glossary.py     a TSV glossary: source terms found in a sentence become constraints on its translation
pair_filter.py  TranslationScoreFilter: the one cleaning transform that needs a model
"""

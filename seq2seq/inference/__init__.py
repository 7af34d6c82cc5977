"""The inference layer: what a user calls to translate with a model. One translation path for every
surface (Python, seq2seq-translate, the server, the corpus commands): a request, prepared, searched and
finished into Translations. One concept per module:

api.py          the public inference surface: what export, serve and users import
request.py      TranslationRequest: texts, per text its languages, prefix and constraints; per request the search
prepared.py     a request as the search takes it: markup out, encoded per language, pieces, prefixes, phrases
pipeline.py     the one path: prepare -> search -> finish, and requests of any languages searched together
translation_setup.py  the Protocol of what the pipeline reads of a Translator
translator.py   Translator: the Python API over the pipeline (load once; texts in, translations out)
attention_output.py  alignments and attention pictures of translations (alignment=true, attention_dir=)
output_writers.py  Translations as lines: tab-separated columns, JSON lines, Moses n-best; the run report
sentences.py    segment=sentences: a paragraph split into sentences (sentencex), joined with their whitespace
language_detection.py  src_lang=auto: each text's language, detected with Lingua among every language it knows
language_columns.py  per-line languages of a file to translate (seq2seq-translate's language_columns)
text_files.py   text in and out, one line per line: a file, or - for stdin / stdout
quality.py      QualityEstimator: a QE checkpoint scoring (source, translation) pairs (qe_checkpoint)
languages.py    a multilingual model's languages: src_lang / tgt_lang, the target code every search forces
settings.py     every translation setting under its name in the CLI, Python and server JSON; the old names
engine_choice.py  which engine a checkpoint path gets (torch, CTranslate2), and what it can run (int8)
engines.py      what a Translator searches with: our PyTorch search, or CTranslate2 on an exported model
generator_engine.py  an exported decoder-only model run by CTranslate2's Generator
input_limits.py the longest source a model reads and still has room to answer; the checked setting
loading.py      a model and its tokenizers rebuilt from a checkpoint file alone
exported.py     reading a model directory written by seq2seq-export
results.py      a search's hypotheses as Translations: pieces joined per text, ranked, with n-best lists
confidence.py   Translation, per-token probabilities and sentence confidence; the n-best JSON records
rerank.py       a QE model's score on every hypothesis, n-best lists re-ranked by it, the rerank settings
text_input.py   reading text to translate or score (file or stdin, strict or lenient UTF-8)
constraint_input.py  phrases as users give them (text per line) turned into checked target tokens
glossary.py     a TSV glossary: source terms found in a sentence become constraints on its translation
pair_filter.py  TranslationScoreFilter: the one cleaning transform that needs a model
alignment.py    word alignment from the model's cross-attention (argmax links), or by position
markup.py       inline tags, entities and placeholders taken out of a line: its plain text and elements
tag_projection.py  a line's markup put back into its translation by the alignment of their pieces
piece_spans.py  where each piece of a tokenized text stands in the text (character spans)
markup_text.py  markup=auto|true|false: the Translator's texts with markup, out before the search, back after
document_formats/  format=html|xliff|po: whole files translated segment by segment into the same format
"""

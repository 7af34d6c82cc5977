"""Command-line entry points (thin: they read configs and files, and call the package):

prepare.py        seq2seq-prepare: build or check the corpus of a data config
train.py          seq2seq-train: compose the config, build data/model/optimizer, train
translate.py      seq2seq-translate: a layer over seq2seq.Translator (files, stdin, n-best, alignments)
backtranslate.py  seq2seq-backtranslate: monolingual text + a reverse model -> synthetic parallel data
distill.py        seq2seq-distill: training sources + a teacher -> the corpus a student learns from
export.py         seq2seq-export: a checkpoint -> a CTranslate2 model directory, or a Hugging Face one
import_model.py   seq2seq-import: a Hugging Face model directory (MarianMT, M2M100/NLLB) -> a checkpoint
shortlist.py      seq2seq-shortlist: a vocabulary shortlist for a model, learned from its training text
serve.py          seq2seq-serve: the HTTP server's settings, checked before the model loads
score.py          seq2seq-score: BLEU, chrF, TER with sacreBLEU signatures (--flags: it takes file lists)
average.py        seq2seq-average: average the weights of the last checkpoints (--flags, as fairseq's)
qe_data.py        seq2seq-qe-data: translate a parallel corpus with checkpoints, label outputs: a QE corpus
qe_train.py       seq2seq-qe-train: train an encoder-only QE model with the training loop of seq2seq-train
qe.py             seq2seq-qe: score translations with a QE model, one line per input line
config/           their config plumbing: the config tree, schemas, renamed keys, a config -> typed settings
"""

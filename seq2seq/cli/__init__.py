"""Command-line entry points (thin: they read configs and files, and call the package):

prepare.py        seq2seq-prepare: build or check the corpus of a data config
train.py          seq2seq-train: compose the config, build data/model/optimizer, train
training_data.py  the `data` config group -> what the training loop consumes
translate.py      seq2seq-translate: a layer over seq2seq.Translator (files, stdin, n-best, alignments)
score.py          seq2seq-score: BLEU, chrF, TER with sacreBLEU signatures
average.py        seq2seq-average: average the weights of the last checkpoints
schemas.py        typed schemas that check config values when Hydra composes them
resolvers.py      config resolvers for sweeps: threads per parallel job, the Optuna study's storage and seed
common.py         config location, one-line errors, device and progress-bar settings
"""

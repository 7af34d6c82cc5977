"""Quality estimation: how good is a translation, with no reference to compare it with.

labels.py       sentence-level chrF (or TER) of a translation against its reference: a QE label in [0, 1]
corpus.py       the QE corpus: `source <TAB> translation <TAB> label` lines, read with one-line errors
inputs.py       source/translation pairs to model input: tokenized, fitted into the model's positions
correlation.py  Pearson and Spearman correlation of scores with labels
scorer.py       QualityEstimator: a trained encoder-only checkpoint scoring (source, translation) pairs
warm_start.py   starting a QE model from a translation model's encoder and embeddings (init_from=)
training.py     what training one needs: the encoded corpus, its batches, the loss and validation
generate.py     making a QE corpus from a parallel corpus and translation checkpoints (seq2seq-qe-data)
"""

from seq2seq.qe.scorer import QualityEstimator

__all__ = ["QualityEstimator"]

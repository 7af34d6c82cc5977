"""Quality estimation: how good is a translation, with no reference to compare it with.

labels.py       sentence-level chrF (or TER) of a translation against its reference: a QE label in [0, 1]
corpus.py       the QE corpus: `source <TAB> translation <TAB> label` lines, read with one-line errors
correlation.py  Pearson and Spearman correlation of scores with labels
warm_start.py   starting a QE model from a translation model's encoder and embeddings (init_from=)
training.py     what training one needs: the encoded corpus, its batches, the loss and validation
generate.py     making a QE corpus from a parallel corpus and translation checkpoints (seq2seq-qe-data)

The QE model's scorer, QualityEstimator, is part of inference (seq2seq.inference.quality): a Translator
loads one from qe_checkpoint= to score and re-rank its translations. Its pairs' encoding is
seq2seq.data.qe_pairs.
"""

from seq2seq.inference.quality import QualityEstimator

__all__ = ["QualityEstimator"]

"""Corpora, tokenization and batching. One concept per module:

sword.py, markup.py, alignment.py, bible.py  the embedded Bible corpus (seq2seq-prepare data=bible_en_es)
corpus.py      read, check and normalise parallel text (two files or TSV)
tokenizer.py   Tokenizer: sentencepiece with pad=0, unk=1, bos=2, eos=3
dataset.py     ParallelDataset: encoded pairs, every sequence ending in eos
binarize.py    encoded corpora cached on disk, keyed by content hashes
batching.py    TokenBatchSampler: token-budget, length-sorted, resumable, sharded batches
collate.py     Batch and collate/make_batch: padded (src, tgt_in, tgt_out) tensors
pipeline.py    prepare_training_data: everything training needs, from corpus files
"""

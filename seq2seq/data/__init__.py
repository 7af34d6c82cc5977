"""Corpora, tokenization and batching. One concept per module:

corpus.py        read, check and normalise parallel text line by line (plain or .gz files)
tsv.py           tab-separated corpora, split into plain files
transforms.py    cleaning transforms (data.transforms): normalisers and filters of sentence pairs, per chunk
cleaning.py      clean_corpus: a corpus through its transforms once, into the cache, with a summary
renamed_settings.py  data settings renamed (old names work one release) and read under their new names
sample.py        a uniform sample of a corpus in one streaming pass (what the tokenizer is trained on)
tokenizer.py     Tokenizer: sentencepiece with pad=0, unk=1, bos=2, eos=3
tokenizer_base.py  what both tokenizers share: special ids, the language token put first, saving
qe_pairs.py     (source, translation) pairs as the QE model's input: tokenized, fitted into its positions
mapped_tokenizer.py  MappedTokenizer: an imported Hugging Face tokenizer (Marian, M2M100, NLLB), its exact ids
precompiled_charsmap.py  a sentencepiece charsmap applied as Hugging Face's tokenizers applies it (NLLB)
tokenizer_formats.py  TextTokenizer (both tokenizers' surface), tokenizer_from_bytes / tokenizer_from_file
vocabulary.py    the sentencepiece model(s) of a corpus: reused from a run, from the cache, or trained
token_arrays.py  an encoded corpus on disk: flat .npy arrays written chunk by chunk, mapped read-only
binarize.py      parallel, chunked encoding into the cache, keyed by content hashes, built atomically
dataset.py       ParallelDataset: encoded pairs (mapped arrays + a row index), every sequence ending in eos
mixing.py        several training corpora as one: weights (epoch compositions), source tags
noise.py         seeded word-level source noise (drop, mask, local shuffle) applied as batches are made
batching.py      TokenBatchSampler: token-budget, length-sorted, resumable, sharded batches
collate.py       Batch and collate/make_batch: padded (src, tgt_in, tgt_out) tensors
pipeline.py      prepare_training_data: everything training needs, from corpus files
word_alignment.py  word alignments of a corpus (eflomal both ways, grow-diag-final-and)
piece_links.py   those alignments as token links of each stored pair, cached beside the encoded arrays
bible/           the embedded Bible corpus (seq2seq-prepare data=bible_en_es): SWORD export, alignment
"""

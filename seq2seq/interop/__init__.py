"""Foreign model formats at the edge: Hugging Face model directories in and out; inside, every model is ours.

huggingface_config.py      config.json <-> our model settings
huggingface_weights.py     their parameter names and weight files <-> our state dict
huggingface_tokenizers.py  their tokenizer files <-> our tokenizers (MappedTokenizer; our own as Marian's)
huggingface_import.py      a model directory -> one of our checkpoints (seq2seq-import)
huggingface_export.py      one of our checkpoints -> a model directory (seq2seq-export target=huggingface)
"""

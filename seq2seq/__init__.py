"""seq2seq: a modular Transformer translation framework.

Modules and packages, in import order (a module imports only from its own package and the ones before it;
train/ and inference/ stand side by side and import neither each other):
errors.py      the one-line error type for user mistakes
files.py       atomic writes (temporaries named by host and process)
checkpoint.py  the checkpoint file format
precision.py   fp32 or bf16: the choice `auto` makes, and the one autocast context
devices.py     the device a setting names (auto, cpu, cuda, cuda:N): one default in Python and every command
metrics.py     BLEU, chrF and TER with sacreBLEU signatures
attention_pictures.py  heat maps of attention weights (matplotlib), kept out of the search package
nn/            pure building blocks: positions, attention backends, attention, KV cache, layers
model/         the three families (encoder-decoder, decoder-only, encoder-only) and their builders
data/          corpora, sentencepiece, encoded corpora on disk, token-budget batching
decode/        search: greedy, beam, sampling, constraints, ensembles, shortlists, compiled steps
train/         loss, schedules, optimizer, the training loop, validation, reporting
inference/     the one translation path (request -> pipeline -> Translations) behind the Translator, the
               CLI, the server and the corpus commands; engines, loading, confidence, QE scoring, markup
qe/            quality estimation: labels, the QE corpus, its training task
corpus_translation/  whole files translated into corpora in resumable chunks (back-translation, distillation)
export/        converters to inference engines
interop/       Hugging Face model directories in and out (MarianMT, M2M100/NLLB)
serve/         the HTTP server
cli/           the command-line entry points (Hydra)

`from seq2seq import Translator` is the Python API for a trained model.
"""

from typing import Any

from seq2seq.errors import UserError

__all__ = ["Translator", "UserError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`Translator` is imported on first use, so `import seq2seq` stays light (no torch)."""
    if name == "Translator":
        from seq2seq.inference.translator import Translator

        return Translator
    raise AttributeError(f"module 'seq2seq' has no attribute {name!r}")

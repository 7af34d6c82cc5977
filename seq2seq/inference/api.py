"""The public inference surface: what export, serve and users import.

The packages above inference (seq2seq.export, seq2seq.serve) reach the inference layer and the search
settings only through these names (tests/test_import_direction.py checks it), so the modules behind them
can be split, merged or renamed without touching their users. Each section lists what one user needs.
"""

from __future__ import annotations

from seq2seq.decode.hypotheses import SearchStopped
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.decode.shortlist import Shortlist
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY
from seq2seq.inference.confidence import Translation, nbest_json
from seq2seq.inference.document_formats import FORMATS, translate_document_text
from seq2seq.inference.engines import import_ctranslate2
from seq2seq.inference.exported import (
    FORMAT,
    JOINT_TOKENIZER,
    METADATA_FILE,
    SOURCE_TOKENIZER,
    TARGET_TOKENIZER,
    TORCH_WEIGHTS_FILE,
    VERSION,
)
from seq2seq.inference.language_detection import AUTO, detect, language_name
from seq2seq.inference.languages import ModelLanguages
from seq2seq.inference.loading import LoadedModel, load_for_inference
from seq2seq.inference.markup_text import markup_setting
from seq2seq.inference.prepared import Prepared, TooLong, merge, text_of
from seq2seq.inference.request import TextRequest, TranslationRequest
from seq2seq.inference.sentences import SEGMENTS
from seq2seq.inference.translator import Translator

# --- what users call
__all__ = ["DEFAULT_OPTIONS", "SearchOptions", "Translation", "Translator"]

# --- what export uses
__all__ += [
    "FORMAT",  # the exported directory's layout: its metadata file, what it records, the tokenizer files
    "JOINT_TOKENIZER",
    "METADATA_FILE",
    "PAYLOAD_KEY",  # a model's tuned decoding, under this key in checkpoints and in the metadata
    "SOURCE_TOKENIZER",
    "TARGET_TOKENIZER",
    "TORCH_WEIGHTS_FILE",
    "VERSION",
    "LoadedModel",  # a checkpoint's model and tokenizers, rebuilt for inference
    "Shortlist",  # a vocabulary shortlist, exported as CTranslate2's vocabulary map
    "import_ctranslate2",  # CTranslate2, or a one-line error naming the pip extra
    "load_for_inference",
]

# --- what serve uses
__all__ += [
    "AUTO",  # src_lang=auto: the language detected per text; the detector and the languages' names
    "FORMATS",  # the document formats a request may name ("format"), and their translation
    "SEGMENTS",  # "none" | "sentences": a request's "segment"
    "ModelLanguages",  # the languages a model reads and writes, and whether it takes their codes
    "Prepared",  # a request prepared for the search (the pipeline's first step), and how batches join them
    "SearchStopped",  # what a search nobody waits for any more ends with
    "TextRequest",  # the typed request every surface builds
    "TooLong",
    "TranslationRequest",
    "detect",
    "language_name",
    "markup_setting",  # "auto" | "true" | "false" from a request's "markup"
    "merge",
    "nbest_json",  # a text's n-best Translations as the one JSON shape of the CLI and the server
    "text_of",
    "translate_document_text",
]

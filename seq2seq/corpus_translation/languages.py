"""Which languages a corpus translation's model reads and writes: those its checkpoint was trained for,
and, for a multilingual model, the codes the corpus's suffixes name.

A language code here is also a file suffix of the corpus (bt.en, distill.es).
"""

from __future__ import annotations

from pathlib import Path

from seq2seq.checkpoint import load_checkpoint
from seq2seq.errors import UserError
from seq2seq.inference.exported import read_metadata
from seq2seq.inference.languages import codes_listed, names_target_on_source
from seq2seq.inference.translator import Translator


def is_multilingual(translator: Translator) -> bool:
    """Whether the model has language codes: it may then translate in other directions than the one its
    training config records."""
    return bool(translator.src_tokenizer.languages or translator.tgt_tokenizer.languages)


def with_corpus_languages(translator: Translator, *, reads: str, writes: str) -> Translator:
    """A multilingual model told to read `reads` and write `writes`, the corpus's file suffixes, where they
    are codes of its own (our models' en, es; NLLB's eng_Latn when the files are named so); a side whose
    suffix is not one of its codes keeps the language recorded at import. A model without language codes
    is returned as it is. A side left with no language at all is a one-line error."""
    src_codes, tgt_codes = translator.src_tokenizer.languages, translator.tgt_tokenizer.languages
    if not (src_codes or tgt_codes):
        return translator
    if names_target_on_source(translator.src_tokenizer):  # OPUS-MT: only the target is named
        chosen = translator.for_languages(tgt_lang=writes if writes in src_codes else None)
    else:
        chosen = translator.for_languages(src_lang=reads if reads in src_codes else None,
                                          tgt_lang=writes if writes in tgt_codes else None)  # fmt: skip
    try:
        chosen.check_languages()
    except UserError:
        codes = codes_listed(tgt_codes or src_codes)
        raise UserError(f"this multilingual model needs the languages it reads and writes, and the corpus "
                        f"suffixes {reads} -> {writes} are not its codes ({codes}); name the files by its "
                        "codes (src_lang=, tgt_lang=)") from None  # fmt: skip
    return chosen


def model_languages(translator: Translator, checkpoint: Path) -> tuple[str, str] | None:
    """(source, target) the model was trained for: a checkpoint's, or an exported directory's."""
    return translator.languages or exported_languages(checkpoint)


def exported_languages(directory: Path) -> tuple[str, str] | None:
    """(source, target) of an exported model's training config, from the PyTorch weights it keeps."""
    if not directory.is_dir():
        return None
    weights = read_metadata(directory).get("torch_weights")
    if not weights or not (directory / weights).is_file():
        return None
    data = (load_checkpoint(directory / weights, mmap=True).get("config") or {}).get("data") or {}
    if not (data.get("src_lang") and data.get("tgt_lang")):
        return None
    return str(data["src_lang"]), str(data["tgt_lang"])


__all__ = ["exported_languages", "is_multilingual", "model_languages", "with_corpus_languages"]

"""seq2seq-shortlist: learn a vocabulary shortlist for a model from its parallel training text.

seq2seq-shortlist checkpoint=runs/bible.en-es/best.pt src_file=data/bible_en_es/train.en \
    tgt_file=data/bible_en_es/train.es output=runs/bible.en-es/shortlist.pt
seq2seq-translate checkpoint=runs/bible.en-es/best.pt shortlist=runs/bible.en-es/shortlist.pt ...

A multilingual model's shortlist serves one direction, named by src_lang= and tgt_lang= (the languages of
src_file= and tgt_file=); seq2seq-translate refuses it for any other.

source= and target= are src_file's and tgt_file's old names (renamed in this release: `target` is what
seq2seq-export converts for), accepted until the next release.
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import hydra
from omegaconf import DictConfig

from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.data.corpus import iter_corpus_lines, iter_line_pairs
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_bytes
from seq2seq.decode.shortlist import build_shortlist, tokenizer_digest
from seq2seq.errors import UserError
from seq2seq.inference.languages import codes_listed, with_language

log = logging.getLogger("seq2seq.shortlist")
ENCODE_LINES = 4096  # lines tokenized per call


def _readable(path: str, what: str) -> str:
    """`path` made absolute, once it is known to open: the error names the setting, not the data config."""
    absolute = hydra.utils.to_absolute_path(path)
    try:
        open(absolute, "rb").close()
    except OSError as error:
        why = error.strerror
        raise UserError(f"{what}={path} cannot be read ({why}); pass an existing text file") from None
    return absolute


def _pairs(
    cfg: DictConfig, tokenizers: tuple[TextTokenizer, TextTokenizer]
) -> Iterator[tuple[list[int], list[int]]]:
    """Token-id pairs of the two files (plain or .gz, read as training reads them: seq2seq.data.corpus),
    a block at a time (memory flat in their size). Invalid UTF-8 becomes U+FFFD; files of unequal
    length, or a damaged .gz, are one-line errors."""
    source, target = _readable(str(cfg.src_file), "src_file"), _readable(str(cfg.tgt_file), "tgt_file")
    lines = iter_line_pairs(
        iter_corpus_lines(source, encoding_errors="replace"),
        iter_corpus_lines(target, encoding_errors="replace"),
        src_name=f"src_file={cfg.src_file}",
        tgt_name=f"tgt_file={cfg.tgt_file}",
    )
    while block := list(itertools.islice(lines, ENCODE_LINES)):
        src = tokenizers[0].encode_batch([s for s, _ in block])
        tgt = tokenizers[1].encode_batch([t for _, t in block])
        yield from zip(src, tgt)


def _direction(cfg: DictConfig, tokenizers: tuple[TextTokenizer, TextTokenizer]) -> tuple[str, str] | None:
    """A multilingual model's direction (src_lang, tgt_lang), both needed and both its own; None for a
    model without language codes (which refuses them)."""
    src_lang, tgt_lang = cfg.get("src_lang"), cfg.get("tgt_lang")
    if not tokenizers[1].languages:
        for name, value in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
            if value is not None:
                raise UserError(f"{name}={value!r}: this model has no language codes; leave {name} out")
        return None
    if src_lang is None or tgt_lang is None:
        codes = codes_listed(tokenizers[1].languages)
        raise UserError("this model is multilingual: a shortlist serves one direction; pass src_lang= and "
                        f"tgt_lang= (the languages of src_file= and tgt_file=), from {codes}")  # fmt: skip
    given = (("src_lang", src_lang, tokenizers[0]), ("tgt_lang", tgt_lang, tokenizers[1]))
    for name, value, tokenizer in given:
        with_language(tokenizer, str(value), setting=name)  # a code the model lacks: a one-line error
    return str(src_lang), str(tgt_lang)


@exit_on_user_error
def make_shortlist(cfg: DictConfig) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                        datefmt="%H:%M:%S")  # fmt: skip
    checkpoint = hydra.utils.to_absolute_path(str(cfg.checkpoint))
    payload = load_checkpoint(Path(checkpoint), map_location="cpu")
    if not isinstance(payload, dict) or "tokenizer" not in payload:
        raise UserError(f"checkpoint {checkpoint} holds no tokenizers; pass one written by seq2seq-train")
    models = payload["tokenizer"]
    src_model = models["src"]
    tgt_model = models.get("tgt") or src_model
    tokenizers = (tokenizer_from_bytes(src_model), tokenizer_from_bytes(tgt_model))
    languages = _direction(cfg, tokenizers)
    shortlist = build_shortlist(
        _pairs(cfg, tokenizers),
        src_vocab_size=tokenizers[0].vocab_size, tgt_vocab_size=tokenizers[1].vocab_size,
        per_source=int(cfg.per_source), frequent=int(cfg.frequent),
        always=(tokenizers[1].eos_id, tokenizers[1].unk_id),
        digests=(tokenizer_digest(src_model), tokenizer_digest(tgt_model)), languages=languages,
    )  # fmt: skip
    output = Path(hydra.utils.to_absolute_path(str(cfg.output)))
    output.parent.mkdir(parents=True, exist_ok=True)
    shortlist.save(output)
    log.info("wrote %s", output)


main = command_main(make_shortlist, command="seq2seq-shortlist", config_name="shortlist")


if __name__ == "__main__":
    main()

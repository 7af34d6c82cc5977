"""A tiny multilingual model, as seq2seq-import writes an M2M100 one: tiny_tokenizer()'s sentencepiece model
behind MappedTokenizers (seq2seq.data.mapped_tokenizer) with three language codes after its pieces, the
source tokenizer putting its language's code first, the target one the code the model must write first.
Also its OPUS-MT counterpart (kind "marian"), whose ">>xx<<" target-language tokens go on the source.

Random weights (tiny_model), with the codes' output rows shrunk so that the model does not simply repeat
the forced code: its outputs then differ from language to language and from text to text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import tiny_model, tiny_tokenizer

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.mapped_tokenizer import MappedTokenizer, piece_names

CODES = ("en", "es", "fr")  # the tokens "__en__", "__es__", "__fr__", after the sentencepiece pieces
PAD, UNK, DECODER_START, EOS = 0, 1, 2, 3  # tiny_tokenizer()'s sentencepiece ids
OPTIONS = {"max_len_a": 0.0, "max_len_b": 8}  # short searches


def mapped_tokenizers(
    src_lang: str | None = "en", tgt_lang: str | None = "es", *, kind: str = "m2m100"
) -> tuple[MappedTokenizer, MappedTokenizer]:
    """(source, target) tokenizers with `src_lang` / `tgt_lang` recorded (None: none, as an import
    without them); the decoder starts from "<s>". `kind` "marian": the codes are ">>xx<<" tokens."""
    model = tiny_tokenizer().to_bytes()
    pieces = piece_names(model)
    languages = {code: len(pieces) + index for index, code in enumerate(CODES)}
    names = [f">>{code}<<" if kind == "marian" else f"__{code}__" for code in CODES]

    def side(language: str | None) -> MappedTokenizer:
        return MappedTokenizer(
            kind=kind, model=model, vocabulary=[*pieces, *names], pad_id=PAD, eos_id=EOS, unk_id=UNK,
            bos_id=DECODER_START, specials=[PAD, UNK, DECODER_START, EOS, *languages.values()],
            languages=languages, language=language,
        )  # fmt: skip

    return side(src_lang), side(tgt_lang)


def multilingual_checkpoint(
    path: Path, *, src_lang: str | None = "en", tgt_lang: str | None = "es", kind: str = "m2m100"
) -> Path:
    """A checkpoint file of a random tiny model over mapped_tokenizers(src_lang, tgt_lang, kind=kind)."""
    src, tgt = mapped_tokenizers(src_lang, tgt_lang, kind=kind)
    model = tiny_model(tgt.vocab_size, seed=3, max_positions=128)
    with torch.no_grad():
        model.output.weight[min(src.languages.values()) :] *= 0.3  # (codes, D): rarely chosen freely
    payload = {
        "model": model.state_dict(),
        "model_config": model.config,
        "step": 1,
        "tokenizer": {"src": src.to_bytes(), "tgt": tgt.to_bytes()},
    }
    save_checkpoint(path, payload)
    return path


def module_fixtures() -> tuple[Any, Any]:
    """Module-scoped fixtures for a test module, `checkpoint, translator = module_fixtures()`: the
    multilingual_checkpoint file (source "en", target "es") and its Translator with OPTIONS' short searches.
    Assigned rather than imported, so that the tests' arguments of the same names do not shadow an import."""

    @pytest.fixture(scope="module")
    def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return multilingual_checkpoint(tmp_path_factory.mktemp("model") / "model.pt")

    @pytest.fixture(scope="module")
    def translator(checkpoint: Path) -> Any:
        from seq2seq import Translator

        return Translator.from_checkpoint(checkpoint, options=OPTIONS)

    return checkpoint, translator


def own_multilingual_checkpoint(path: Path) -> Path:
    """A checkpoint of a random tiny model over one of our own sentencepiece models whose user symbols are
    the language tokens of CODES (as a multilingual seq2seq-train run makes it): no language recorded."""
    from seq2seq.data.tokenizer import Tokenizer, language_token
    from tiny_models import sentences

    tokenizer = Tokenizer.train(sentences(400, 0), vocab_size=70, model_type="bpe",
                                user_symbols=[language_token(code) for code in CODES])  # fmt: skip
    model = tiny_model(tokenizer.vocab_size, seed=3, max_positions=128)
    with torch.no_grad():
        model.output.weight[list(tokenizer.languages.values())] *= 0.3  # rarely chosen freely
    payload = {
        "model": model.state_dict(),
        "model_config": model.config,
        "step": 1,
        "tokenizer": {"src": tokenizer.to_bytes(), "tgt": None},
    }
    save_checkpoint(path, payload)
    return path


def dev_validator(checkpoint: Path, texts: list[str], search, *, max_tokens: int = 4096):
    """A Validator whose dev set is `texts` (sources and references alike) as the checkpoint's Translator
    encodes them, and the checkpoint's model: (validator, model)."""
    from seq2seq import Translator
    from seq2seq.inference.loading import load_for_inference
    from seq2seq.train.validation import Validator

    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    sources = Translator.from_checkpoint(checkpoint).encode(texts).sources
    check = Validator(
        dev=[(torch.tensor(source),) for source in sources], dev_batches=[], make_batch=lambda indices: None,
        dev_src_texts=texts, dev_ref_texts=texts, src_tokenizer=loaded.src_tokenizer,
        tgt_tokenizer=loaded.tgt_tokenizer, loss_fn=lambda *args: None, device=torch.device("cpu"),
        precision="fp32", search=search, max_tokens=max_tokens, n_samples=len(texts), attention_plot=False,
    )  # fmt: skip
    return check, loaded.model


def tagged_sentences(count: int) -> list[str]:
    """sentences() with a <b> pair around some of their words and, in about half, an image tag first:
    lines whose markup a multilingual model's language token must not move."""
    import random

    from tiny_models import sentences

    rng, texts = random.Random(0), []
    for sentence in sentences(count, 5):
        words = sentence.split()
        first = rng.randrange(len(words))
        last = rng.randrange(first, len(words))
        words[first], words[last] = "<b>" + words[first], words[last] + "</b>"
        texts.append(('<img src="x"> ' if rng.random() < 0.5 else "") + " ".join(words))
    return texts

"""Our own multilingual model (language tokens among its sentencepiece user symbols) through what comes
after training: averaging, int8, shortlists (one per direction), constraints and confidence. Each works
per direction as a call with src_lang/tgt_lang does, or is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from multilingual_model import OPTIONS, own_multilingual_checkpoint

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.data.tokenizer_formats import tokenizer_from_bytes
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.shortlist import build_shortlist, tokenizer_digest
from seq2seq.errors import UserError
from seq2seq.inference.translator import Translator
from seq2seq.train.averaging import average_checkpoints

SEARCH = SearchOptions(beam_size=3, **OPTIONS)
TEXTS = ["the man sees the dog", "good water"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_multilingual_checkpoint(tmp_path_factory.mktemp("own") / "model.pt")


def first_tokens(translator: Translator, tgt_lang: str) -> set[int]:
    """The first token of every hypothesis of an en->tgt_lang search of TEXTS."""
    chosen = translator.for_languages(src_lang="en", tgt_lang=tgt_lang)
    found = chosen.search(chosen.encode(TEXTS).sources)
    return {nbest[0].tokens[0] for nbest in found}


def test_an_average_of_multilingual_checkpoints_keeps_the_languages(checkpoint: Path, tmp_path: Path) -> None:
    payload = load_checkpoint(checkpoint)
    other = {**payload, "model": {k: v * 0.5 for k, v in payload["model"].items()}, "step": 2}
    save_checkpoint(tmp_path / "other.pt", other)
    averaged = average_checkpoints([checkpoint, tmp_path / "other.pt"])
    assert all(torch.allclose(averaged["model"][k], payload["model"][k] * 0.75) for k in payload["model"])
    save_checkpoint(tmp_path / "averaged.pt", averaged)
    translator = Translator.from_checkpoint(tmp_path / "averaged.pt", options=SEARCH)
    codes = translator.tgt_tokenizer.languages
    assert sorted(codes) == ["en", "es", "fr"]
    assert first_tokens(translator, "fr") == {codes["fr"]} and first_tokens(translator, "es") == {codes["es"]}


def test_int8_forces_each_target_language(checkpoint: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH, quantization="int8")
    codes = translator.tgt_tokenizer.languages
    assert first_tokens(translator, "es") == {codes["es"]} and first_tokens(translator, "fr") == {codes["fr"]}
    texts = {lang: [t.text for t in translator.translate(TEXTS, src_lang="en", tgt_lang=lang)] for lang in ("es", "fr")}
    assert texts["es"] != texts["fr"] and not any("__" in text for text in texts["es"] + texts["fr"])


def shortlist_for(checkpoint: Path, path: Path, languages: tuple[str, str] | None) -> Path:
    models = load_checkpoint(checkpoint)["tokenizer"]
    tokenizer = tokenizer_from_bytes(models["src"])
    pairs = [(tokenizer.encode(text), tokenizer.encode(text.upper())) for text in TEXTS * 3]
    shortlist = build_shortlist(
        pairs, src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, per_source=3,
        frequent=5, always=(tokenizer.eos_id, tokenizer.unk_id),
        digests=(tokenizer_digest(models["src"]), tokenizer_digest(models["src"])), languages=languages,
    )  # fmt: skip
    shortlist.save(path)
    return path


def test_a_shortlist_serves_its_own_direction_and_refuses_others(checkpoint: Path, tmp_path: Path) -> None:
    path = shortlist_for(checkpoint, tmp_path / "en-es.pt", ("en", "es"))
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH, shortlist=path)
    assert translator.engine.shortlist.languages == ("en", "es")
    codes = translator.tgt_tokenizer.languages
    assert first_tokens(translator, "es") == {codes["es"]}  # the forced token is a candidate
    with pytest.raises(UserError, match=r"shortlist= was learned for en->es, not en->fr"):
        translator.translate(TEXTS, src_lang="en", tgt_lang="fr")
    with pytest.raises(UserError, match=r"learned for en->es, not es->\?"):
        Translator.from_checkpoint(checkpoint, options=SEARCH, shortlist=path, src_lang="es")


def test_constraints_are_met_after_the_forced_target_token(checkpoint: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    codes = translator.tgt_tokenizer.languages
    (result,) = translator.translate(["the man sees"], src_lang="en", tgt_lang="fr", constraints=[["water"]])
    assert "water" in result.text and "__" not in result.text
    chosen = translator.for_languages(src_lang="en", tgt_lang="fr")
    phrase = chosen.tgt_tokenizer.encode("water")
    assert phrase[0] == codes["fr"]  # the tokenizer's encode starts with the code; a constraint must not


def test_confidence_describes_the_translation_without_its_language_token(checkpoint: Path) -> None:
    translator = Translator.from_checkpoint(checkpoint, options=SEARCH)
    pieces = {f"__{code}__" for code in translator.tgt_tokenizer.languages}
    for lang in ("es", "fr"):
        chosen = translator.for_languages(src_lang="en", tgt_lang=lang)
        searched = chosen.search(chosen.encode(TEXTS).sources)
        for result, nbest in zip(translator.translate(TEXTS, src_lang="en", tgt_lang=lang, confidence=True), searched):
            assert len(result.tokens) == len(result.token_probs) == len(nbest[0].tokens)  # the code left out
            assert not pieces & set(result.tokens) and 0 < result.confidence <= 1

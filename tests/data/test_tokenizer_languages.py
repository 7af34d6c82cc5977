"""Our own sentencepiece models with language tokens (__en__, __es__): multilingual as an imported
M2M100/NLLB model is, through the same Translator surface (src_lang, tgt_lang, the forced target code)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_models import save_tiny_checkpoint, sentences, tiny_model

from seq2seq.data.tokenizer import Tokenizer, language_token
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.translator import Translator


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    symbols = [language_token("en"), language_token("es"), language_token("spa_Latn"), "<bt>"]
    return Tokenizer.train(sentences(400, 0), vocab_size=70, model_type="bpe", user_symbols=symbols)


def test_language_tokens_are_the_user_symbols_named_as_languages(tokenizer: Tokenizer) -> None:
    codes = tokenizer.languages
    assert sorted(codes) == ["en", "es", "spa_Latn"] and "<bt>" not in codes
    assert all(tokenizer.id_to_piece(i) == f"__{code}__" for code, i in codes.items())
    assert Tokenizer.from_bytes(tokenizer.to_bytes()).languages == codes
    plain = Tokenizer.train(sentences(400, 0), vocab_size=64, model_type="bpe")
    assert plain.languages == {} and plain.prefix == ()


def test_a_chosen_language_comes_first_and_is_never_text(tokenizer: Tokenizer) -> None:
    spanish = tokenizer.for_language("es")
    assert spanish.language == "es" and tokenizer.language is None  # a copy: the model is unchanged
    ids = spanish.encode("the light was good")
    assert ids == [tokenizer.languages["es"], *tokenizer.encode("the light was good")]
    assert spanish.encode_batch(["the day", "night"]) == [spanish.encode("the day"), spanish.encode("night")]
    assert spanish.decode(ids) == "the light was good" == tokenizer.decode(ids)
    assert spanish != tokenizer and spanish == tokenizer.for_language("es")
    with pytest.raises(UserError, match="'fr' is not one of this tokenizer's languages: en, es, spa_Latn"):
        tokenizer.for_language("fr")
    with pytest.raises(UserError, match="language code 'e s'"):
        language_token("e s")


def test_the_translator_forces_the_target_languages_token(tokenizer: Tokenizer, tmp_path: Path) -> None:
    model = tiny_model(tokenizer.vocab_size, seed=2, sharpness=4.0)
    options = SearchOptions(beam_size=2, max_len_a=0.0, max_len_b=6)
    checkpoint = save_tiny_checkpoint(tmp_path / "multilingual.pt", model, tokenizer, step=1)
    translator = Translator.from_checkpoint(checkpoint, options=options)
    texts = sentences(3, seed=9)
    with pytest.raises(UserError, match="none was chosen; pass src_lang= one of en, es, spa_Latn"):
        translator.translate(texts)
    with pytest.raises(UserError, match="tgt_lang='fr' is not a language of this model"):
        translator.translate(texts, src_lang="en", tgt_lang="fr")
    chosen = translator.for_languages(src_lang="en", tgt_lang="es")
    encoded = chosen.encode(texts)
    assert all(source[0] == tokenizer.languages["en"] for source in encoded.sources)
    for nbest in chosen.search(encoded.sources):
        assert nbest[0].tokens[0] == tokenizer.languages["es"]  # forced, then the model's own pieces
    translations = translator.translate(texts, src_lang="en", tgt_lang="es")
    assert [t.text for t in translations] == [t.text for t in chosen.translate(texts)]
    assert all("__" not in t.text and tokenizer.languages["es"] not in t.tokens for t in translations)

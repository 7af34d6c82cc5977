"""A multilingual model's languages (seq2seq.inference.languages): every search of the Translator forces the
target language code first, exactly as the search's own prefixes do, in greedy, beam, sampling, n-best and
constrained search, and with CTranslate2; tgt_lang / src_lang choose the codes (at construction or per
call, the same way); the code never shows in a Translation's text or tokens; user prefixes come after it,
once; long lines split keep the source code on every piece; mistakes are one-line errors naming the fix."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from in_process import translate_lines
from multilingual_model import OPTIONS, mapped_tokenizers, module_fixtures, multilingual_checkpoint
from tiny_models import tiny_model_checkpoint, tiny_tokenizer

from seq2seq import Translator
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import search_ids
from seq2seq.errors import UserError
from seq2seq.inference.languages import SHOWN_CODES, codes_listed
from seq2seq.inference.loading import load_for_inference

TEXTS = ["in the beginning god created heaven", "the night was good", "", "water and land"]
SRC, TGT = mapped_tokenizers()
ES, FR, EN = (SRC.languages[code] for code in ("es", "fr", "en"))
SEARCHES = {
    "greedy": SearchOptions(beam_size=1, **OPTIONS),
    "beam": SearchOptions(beam_size=4, **OPTIONS),
    "nbest": SearchOptions(beam_size=4, nbest=3, **OPTIONS),
    "sampling": SearchOptions(sampling=True, nbest=2, seed=7, **OPTIONS),
}


checkpoint, translator = module_fixtures()  # imported with source "en" and target "es"


def reference_search(checkpoint: Path, sources: list[list[int]], options: SearchOptions, code: int | None):
    """The decode layer's own search with `code` forced first on every source (None: nothing forced)."""
    return reference_search_with(
        checkpoint, sources, options, None if code is None else [[code] for _ in sources]
    )


def reference_search_with(checkpoint: Path, sources, options, prefixes):
    """The decode layer's own search (seq2seq.decode.search) with these forced prefixes."""
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    return search_ids(loaded.model, sources, options=options, ids=SpecialIds.of(loaded.tgt_tokenizer),
                      device=torch.device("cpu"), prefixes=prefixes)  # fmt: skip


@pytest.mark.parametrize("search", SEARCHES)
def test_every_search_forces_the_target_code_first(checkpoint, translator, search):
    options = SEARCHES[search]
    sources = translator.encode(TEXTS).sources
    assert [source[:1] for source in sources] == [[EN], [EN], [], [EN]]  # the source code first
    found = translator.search(sources, options)
    assert found == reference_search(checkpoint, sources, options, ES)
    starts = {hypothesis.tokens[0] for nbest in found for hypothesis in nbest}
    assert starts == {ES} and [len(nbest) for nbest in found] == [options.nbest] * 2 + [0, options.nbest]
    free = reference_search(checkpoint, sources, options, None)  # unforced, the model starts otherwise
    assert {hypothesis.tokens[0] for nbest in free for hypothesis in nbest} != {ES}


def test_the_code_is_in_no_translation_text_nor_tokens(translator):
    """A Translation's text, tokens and token probabilities are its hypothesis' without the forced code;
    its score is the search's."""
    options = SEARCHES["nbest"]
    found = translator.search(translator.encode(TEXTS).sources, options, confidence=True)
    translations = translator.translate(TEXTS, options=options, confidence=True)
    assert [len(best.nbest) for best in translations] == [3, 3, 1, 3]  # "": one empty translation
    for best, nbest in zip(translations, found):
        for translation, hypothesis in zip(best.nbest, nbest):
            own, scores = hypothesis.tokens[1:], hypothesis.positional_scores[1:]
            assert translation.text == TGT.decode(own) and "__es__" not in translation.tokens
            assert translation.tokens == [TGT.id_to_piece(i) for i in own] + ["</s>"]
            assert translation.token_probs == [math.exp(value) for value in scores]
            assert translation.score == hypothesis.score


def test_tgt_lang_switches_the_code_per_call_or_at_construction(checkpoint, translator):
    greedy = SEARCHES["greedy"]
    sources = translator.encode(TEXTS).sources
    per_call = translator.translate(TEXTS, options=greedy, tgt_lang="fr", confidence=True)
    built = Translator.from_checkpoint(checkpoint, options=greedy, tgt_lang="fr")
    assert per_call == built.translate(TEXTS, confidence=True)
    assert built.search(sources) == reference_search(checkpoint, sources, greedy, FR)
    spanish = translator.translate(TEXTS, options=greedy)
    assert [t.text for t in per_call] != [t.text for t in spanish]  # another language
    assert translator.tgt_tokenizer.language == "es"  # a per-call choice changes nothing of the Translator


def test_src_lang_puts_its_code_on_the_source(translator):
    french = translator.for_languages(src_lang="fr")
    assert french.encode(TEXTS[:1]).sources == [SRC.for_language("fr").encode(TEXTS[0]) + [SRC.eos_id]]
    assert french.encode(TEXTS[:1]).sources[0][0] == FR and translator.encode(TEXTS[:1]).sources[0][0] == EN
    assert translator.translate(TEXTS, src_lang="fr") == french.translate(TEXTS)


def test_user_prefixes_follow_the_code_once(checkpoint, translator):
    encoded = translator.encode(TEXTS, prefixes=["the night", "", "", "water"])
    forced = encoded.prefixes
    pieces = tiny_tokenizer()  # the same sentencepiece model, its ids unmapped
    assert forced == [[ES, *pieces.encode("the night")], [ES], [ES], [ES, *pieces.encode("water")]]
    found = translator.search(encoded.sources, prefixes=forced)
    assert found == reference_search_with(checkpoint, encoded.sources, translator.options, forced)
    for nbest, prefix in zip(found, forced):
        assert all(hypothesis.tokens[: len(prefix)] == prefix for hypothesis in nbest)
    assert translator.translate(TEXTS, prefixes=["the night", "", "", "water"])[0].text.startswith(
        "the night"
    )


def test_a_split_line_has_the_source_code_on_every_piece(checkpoint):
    translator = Translator.from_checkpoint(
        checkpoint, options=OPTIONS, max_input_tokens=4, long_lines="split"
    )
    encoded = translator.encode(TEXTS[:1])
    body = SRC.encode(TEXTS[0])[1:]
    assert len(encoded.sources) == -(-len(body) // 3) > 1
    assert [piece[:-1] for piece in encoded.sources] == [
        [EN, *body[i : i + 3]] for i in range(0, len(body), 3)
    ]
    found = translator.search(encoded.sources)
    assert all(nbest[0].tokens[0] == ES for nbest in found)
    [split] = translator.translate(TEXTS[:1])
    assert split.text == " ".join(t for t in (TGT.decode(nbest[0].tokens) for nbest in found) if t)


def test_constrained_search_forces_the_code_and_meets_the_phrase(translator):
    options = SEARCHES["beam"]
    encoded = translator.encode(TEXTS, options=options, constraints=[["god"], [], [], ["land"]])
    found = translator.search(encoded)
    assert all(nbest[0].tokens[0] == ES for nbest in found if nbest)
    best = translator.translate(TEXTS, options=options, constraints=[["god"], [], [], ["land"]])
    assert "god" in best[0].text and "land" in best[3].text
    assert best[0].constraints_met == best[0].constraints_total == 1


def test_phrases_are_encoded_without_the_code(translator):
    """Constraints and avoided phrases are written inside a sentence: no language code in front (else an
    avoided phrase would be banned only right after the code). Needs constraint_input.phrase_forms to
    drop the target tokenizer's prefix."""
    pieces = tiny_tokenizer()
    encoded = translator.encode(TEXTS, constraints=[["god"], [], [], ["land"]], avoid=["night"])
    assert encoded.constraints == [[pieces.encode("god")], [], [], [pieces.encode("land")]]
    assert encoded.avoid == (tuple(pieces.encode("night")),)


def test_ctranslate2_forces_the_code_like_our_engine(checkpoint, tmp_path):
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install '.[export]'")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    theirs = Translator.from_checkpoint(exported, options={**OPTIONS, "beam_size": 1})
    ours = Translator.from_checkpoint(checkpoint, options={**OPTIONS, "beam_size": 1})
    sources = ours.encode(TEXTS).sources
    assert theirs.encode(TEXTS).sources == sources
    assert [[h.tokens for h in nbest] for nbest in theirs.search(sources)] == [
        [h.tokens for h in nbest] for nbest in ours.search(sources)
    ]
    assert [t.text for t in theirs.translate(TEXTS, tgt_lang="fr")] == [
        t.text for t in ours.translate(TEXTS, tgt_lang="fr")
    ]


def test_an_opus_mt_model_reads_the_target_code_on_the_source(tmp_path):
    """A multilingual OPUS-MT model is told the target language by a ">>xx<<" token at the start of the
    source; nothing is forced on its output, and nothing is required (a text may start with the token)."""
    path = multilingual_checkpoint(tmp_path / "opus.pt", src_lang=None, tgt_lang=None, kind="marian")
    translator = Translator.from_checkpoint(path, options=OPTIONS)
    french = translator.for_languages(tgt_lang="fr")
    sources = french.encode(TEXTS).sources
    assert (
        sources[0] == [FR, *tiny_tokenizer().encode(TEXTS[0]), SRC.eos_id]
        and french.tgt_tokenizer.prefix == ()
    )
    assert french.search(sources) == reference_search(path, sources, translator.options, None)
    assert translator.translate(TEXTS, tgt_lang="fr") == french.translate(TEXTS)
    assert translator.encode(TEXTS[:1]).sources[0][0] != FR  # no code chosen: the text as it is
    with pytest.raises(UserError, match=r"^src_lang='en': this OPUS-MT model is told only the language"):
        translator.translate(TEXTS, src_lang="en")


# ------------------------------------------------------------------------------------------ mistakes
def test_an_unknown_code_lists_the_models_codes(checkpoint, translator):
    with pytest.raises(
        UserError, match=r"^tgt_lang='de' is not a language of this model; choose one of en, es, fr$"
    ):
        translator.translate(TEXTS, tgt_lang="de")
    with pytest.raises(UserError, match=r"^src_lang='de' is not a language"):
        Translator.from_checkpoint(checkpoint, src_lang="de")


def test_many_codes_are_listed_by_their_first_ones_and_count():
    codes = {f"l{n:02d}": n for n in range(45)}
    listed = codes_listed(codes)
    assert listed == ", ".join(f"l{n:02d}" for n in range(SHOWN_CODES)) + ", ... (45 codes)"
    assert codes_listed({"es": 1, "en": 2}) == "en, es"


def test_a_model_without_codes_refuses_them(tmp_path):
    plain = Translator.from_checkpoint(tiny_model_checkpoint(tmp_path, step=1), options=OPTIONS)
    with pytest.raises(
        UserError, match=r"^tgt_lang='es': this model has no language codes; leave tgt_lang out$"
    ):
        plain.translate(["the night"], tgt_lang="es")
    assert plain.encode(["the night"]).prefixes == [[]]  # nothing forced: the search is as before


def test_a_model_that_recorded_no_language_asks_for_one(tmp_path):
    path = multilingual_checkpoint(tmp_path / "model.pt", src_lang="en", tgt_lang=None)
    translator = Translator.from_checkpoint(path, options=OPTIONS)  # loads: a caller may choose per call
    message = (
        r"^this model translates into 3 languages and none was chosen; pass tgt_lang= one of en, es, fr$"
    )
    with pytest.raises(UserError, match=message):
        translator.translate(TEXTS)
    with pytest.raises(UserError, match=message):
        translator.search([[EN, 5, 3]])
    assert [t.text for t in translator.translate(TEXTS, tgt_lang="es")] == [
        t.text for t in Translator.from_checkpoint(path, options=OPTIONS, tgt_lang="es").translate(TEXTS)
    ]
    translator.warm_up()  # a server's warm-up chooses any language


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["tgt_lang=de"], "error: tgt_lang='de' is not a language of this model; choose one of en, es, fr"),
        (["src_lang=xx"], "error: src_lang='xx' is not a language of this model; choose one of en, es, fr"),
    ],
)
def test_the_cli_says_it_in_one_line(checkpoint, tmp_path, overrides, message):
    code, stderr, output = translate_lines(tmp_path, TEXTS, f"checkpoint={checkpoint}", *overrides)
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert code == 2 and errors == [message] and output is None, stderr[-2000:]


def test_the_cli_translates_into_tgt_lang(checkpoint, translator, tmp_path):
    settings = ["decode=greedy", "decode.max_len_a=0", "decode.max_len_b=8", "tgt_lang=fr"]
    code, stderr, output = translate_lines(tmp_path, TEXTS, f"checkpoint={checkpoint}", *settings)
    assert code == 0, stderr[-2000:]
    assert output == [t.text for t in translator.translate(TEXTS, beam_size=1, tgt_lang="fr")]

"""One vocabulary, one result type: Translator.translate returns one Translation per text (str() of it is
its text, its score always filled, its confidence only when asked, its n-best list in `nbest`); the
settings have the CLI's names (confidence, scores, qe_checkpoint, rerank, rerank_weight) and the old
ones still work for one release with one DeprecationWarning naming the new name."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pytest
from tiny_models import sentences
from tiny_translator import tiny_translator_fixtures

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation, nbest_json
from seq2seq.inference.translator import Translator

OPTIONS = SearchOptions(beam_size=4, max_len_a=0.0, max_len_b=12)
TEXTS = [*sentences(3, seed=5), ""]


class Scorer:
    """A QE stand-in: prefers shorter translations, so re-ranking by it changes the order."""

    def score(self, sources: Sequence[str], translations: Sequence[str]) -> list[float | None]:
        return [-float(len(translation)) for translation in translations]


checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=1, max_positions=64, sharpness=4.0)


def one_warning(caught: list[warnings.WarningMessage], old: str, new: str) -> None:
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert messages == [f"{old} is deprecated and will stop working in the next release; use {new}"]
    assert all(w.filename == __file__ for w in caught)  # it points at the caller's line


def test_translate_returns_one_translation_per_text(translator):
    found = translator.translate(TEXTS)
    assert [type(t) for t in found] == [Translation] * len(TEXTS)
    assert all(str(t) == t.text for t in found) and found[-1].text == "" and found[-1].score == 0
    assert all(t.score < 0 for t in found[:-1])  # always filled
    assert all(t.confidence is None and t.tokens == [] and t.nbest == [] for t in found)
    detailed = translator.translate(TEXTS, confidence=True)
    assert all(0 < t.confidence <= 1 for t in detailed[:-1])
    assert [(t.text, t.score) for t in detailed] == [(t.text, t.score) for t in found]


def test_nbest_rides_on_the_best_translation(translator):
    found = translator.translate(TEXTS, nbest=3)
    single = translator.translate(TEXTS)
    for best, alone, text in zip(found, single, TEXTS):
        assert best == alone and best.nbest[0] == best  # the first alternative is the translation
        assert len(best.nbest) == (3 if text else 1)
        assert [t.score for t in best.nbest] == sorted((t.score for t in best.nbest), reverse=True)
        assert all(t.nbest == [] for t in best.nbest)


def test_nbest_json_is_the_one_nbest_shape(translator):
    best = translator.translate(TEXTS[:1], nbest=2, confidence=True)[0]
    records = nbest_json(best.nbest, confidence=False)
    assert records == [{"text": t.text, "score": round(t.score, 4), "translation": t.text} for t in best.nbest]
    detailed = nbest_json(best.nbest, confidence=True)
    assert list(detailed[0]) == [
        "text",
        "score",
        "confidence",
        "mean_log_prob",
        "tokens",
        "token_probs",
        "translation",  # the old name of "text", sent for one release
    ]
    counted = Translation("x", -1.0, constraints_met=1, constraints_total=2)
    assert nbest_json([counted], confidence=False) == [
        {"text": "x", "score": -1.0, "constraints_met": 1, "constraints_total": 2, "translation": "x"}
    ]


def test_the_old_translate_keywords_still_work_and_warn_once(translator):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = translator.translate(TEXTS, return_confidence=True)
    one_warning(caught, "return_confidence", "confidence")
    assert found == translator.translate(TEXTS, confidence=True) and found[0].confidence is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = translator.translate(TEXTS, return_scores=True)
    one_warning(caught, "return_scores", "each Translation's score (always filled)")
    assert found == translator.translate(TEXTS) and all(isinstance(t.score, (int, float)) for t in found)


def test_qe_checkpoint_and_rerank_take_the_cli_meaning(checkpoint, translator):
    scorer = Scorer()
    scored = Translator.from_checkpoint(checkpoint, options=OPTIONS, qe_checkpoint=scorer)
    assert scored.quality is scorer and scored.rerank_weight is None
    assert all(t.qe is not None for t in scored.translate(TEXTS[:-1]))
    reranked = Translator.from_checkpoint(checkpoint, options=OPTIONS, qe_checkpoint=scorer, rerank="qe")
    assert reranked.rerank_weight == 1.0
    shortest = [
        min(t.nbest, key=lambda a: len(a.text)).text for t in translator.translate(TEXTS[:-1], nbest=4)
    ]
    weighted = Translator.from_checkpoint(
        checkpoint, options=OPTIONS, qe_checkpoint=scorer, rerank="qe", rerank_weight=1000.0
    )
    assert [t.text for t in weighted.translate(TEXTS[:-1])] == shortest


def test_qe_settings_are_checked(checkpoint):
    with pytest.raises(UserError, match=r"rerank=qe needs a QE model: pass qe_checkpoint="):
        Translator.from_checkpoint(checkpoint, rerank="qe")
    with pytest.raises(UserError, match=r"rerank='bleu' is not supported; choose qe"):
        Translator.from_checkpoint(checkpoint, rerank="bleu", qe_checkpoint=Scorer())
    with pytest.raises(UserError, match=r"^QE checkpoint runs/qe/best.pt does not exist; train one with"):
        Translator.from_checkpoint(checkpoint, qe_checkpoint="runs/qe/best.pt")  # a path is loaded
    with pytest.raises(UserError, match=r"not int"):
        Translator.from_checkpoint(checkpoint, qe_checkpoint=3)


def test_quality_is_qe_checkpoints_old_name(checkpoint):
    scorer = Scorer()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        translator = Translator.from_checkpoint(checkpoint, options=OPTIONS, quality=scorer)
    one_warning(caught, "quality", "qe_checkpoint")
    assert translator.quality is scorer and translator.rerank_weight is None


def test_a_rerank_weight_alone_still_reranks_as_it_did(checkpoint):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        translator = Translator.from_checkpoint(checkpoint, qe_checkpoint=Scorer(), rerank_weight=2.0)
    one_warning(caught, "rerank_weight= without rerank=", 'rerank="qe" with rerank_weight=')
    assert translator.rerank_weight == 2.0

"""Constraints with an exported model: CTranslate2 translates the sentences without constraints, our engine
the others on the PyTorch weights the export keeps (equal to the checkpoint's own constrained search),
each translation says which engine found it; avoided phrases are CTranslate2's suppressed sequences; an
export without PyTorch weights refuses constraints in one line and translates everything else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tiny_models import save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq.errors import UserError
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.inference.translator import Translator

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'"
)

OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # a constant limit: one per batch in CTranslate2 too
TEXTS = ["in the beginning god created heaven", "the night was good", "water and land", ""]
CONSTRAINTS = [["god", "light"], [], ["day"], []]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(checkpoint, export with PyTorch weights, export without) of a random tiny model."""
    directory = tmp_path_factory.mktemp("constraints")
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=128, seed=3)
    checkpoint = save_tiny_checkpoint(directory / "model.pt", model, tokenizer, step=3)
    with_weights = export_ctranslate2(checkpoint, directory / "ct2")
    without = export_ctranslate2(checkpoint, directory / "ct2-bare", torch_weights=False)
    return checkpoint, with_weights, without


def has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def test_constrained_sentences_go_to_our_engine_on_the_kept_weights(exported):
    checkpoint, directory, _ = exported
    assert json.loads((directory / "seq2seq.json").read_text())["torch_weights"] == "pytorch.pt"
    ours = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    theirs = Translator.from_checkpoint(directory, options=OPTIONS)
    assert theirs.engine.name == "ctranslate2"
    found = theirs.translate(TEXTS, constraints=CONSTRAINTS, confidence=True)
    assert [t.engine for t in found] == ["torch", "ctranslate2", "torch", None]
    mine = ours.translate(TEXTS, constraints=CONSTRAINTS, confidence=True)
    assert [found[i].text for i in (0, 2)] == [mine[i].text for i in (0, 2)]
    assert found[1].text == theirs.translate(TEXTS[1:2])[0].text  # CTranslate2's own output
    assert [t.constraints_met for t in found] == [2, None, 1, None]
    assert has(found[0].text, "god") and has(found[0].text, "light") and has(found[2].text, "day")


def test_avoided_phrases_are_suppressed_in_ctranslate2(exported):
    _, directory, _ = exported
    theirs = Translator.from_checkpoint(directory, options=OPTIONS)
    word = theirs.translate(TEXTS[1:2])[0].text.split()[0]  # a whole word ("good") it repeats
    assert not has(theirs.translate(TEXTS[1:2], avoid=[word])[0].text, word)


def test_an_export_without_pytorch_weights_refuses_only_constraints(exported):
    _, _, bare = exported
    assert not (bare / "pytorch.pt").exists()
    theirs = Translator.from_checkpoint(bare, options=OPTIONS)
    assert len(theirs.translate(TEXTS)) == len(TEXTS)
    with pytest.raises(
        UserError, match=r"^CTranslate2 has no positive constraints.*torch_weights=true"
    ) as error:
        theirs.translate(TEXTS, constraints=CONSTRAINTS)
    assert "\n" not in str(error.value)


def test_a_prefix_holding_an_avoided_phrase_is_written_by_both_engines_alike(exported):
    """The forced prefix wins over the avoided phrases and no_repeat_ngram_size, which bar what the search
    chooses after it: CTranslate2's target_prefix and our search give the same greedy translation."""
    checkpoint, directory, _ = exported
    texts, prefixes = TEXTS[:2], ["god created", "the night the"]
    for blocking, avoid in ((0, ["god", "night"]), (1, None)):
        options = {**OPTIONS, "beam_size": 1, "no_repeat_ngram_size": blocking}
        ours, other = (Translator.from_checkpoint(m, options=options) for m in (checkpoint, directory))
        mine, theirs = (t.translate(texts, prefixes=prefixes, avoid=avoid) for t in (ours, other))
        assert [t.text for t in mine] == [t.text for t in theirs]
        assert all(t.text.startswith(prefix) and t.score > float("-inf") for t, prefix in zip(mine, prefixes))

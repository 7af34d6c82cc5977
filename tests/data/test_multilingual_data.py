"""A multilingual run's data: each corpus names its languages, whose tokens start its sources and
targets (and the dev set's); everything else about the corpora stays as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf
from toy_corpus import data_config, write_toy_corpus

from seq2seq.cli.config.data_config import training_corpora
from seq2seq.cli.config.training_data import load_data
from seq2seq.errors import UserError


def _config(root: Path, **changes: object) -> OmegaConf:
    toy = write_toy_corpus(root / "toy", train=40)
    config = data_config(
        train=[
            {"src": str(toy / "train.en"), "tgt": str(toy / "train.es"), "src_lang": "en", "tgt_lang": "es"},
            {"src": str(toy / "train.es"), "tgt": str(toy / "train.en"), "src_lang": "es", "tgt_lang": "en"},
        ],
        dev={"src": str(toy / "dev.es"), "tgt": str(toy / "dev.en"), "src_lang": "es", "tgt_lang": "en"},
        cache_dir=root / "cache", vocab_size=70,
    )  # fmt: skip
    for key, value in changes.items():
        OmegaConf.update(config, key, value, merge=False, force_add=True)
    return config


def test_a_language_token_starts_exactly_its_pairs_sides(tmp_path: Path) -> None:
    data = load_data(_config(tmp_path), run_dir=tmp_path / "run", max_tokens=64, seed=3).corpus
    tokenizer, train = data.src_tokenizer, data.train
    codes = tokenizer.languages
    assert sorted(codes) == ["en", "es"]
    for index in range(len(train)):
        src, tgt = train.example(index)
        expected = ("en", "es") if train.corpus_of(index) == 0 else ("es", "en")
        assert (int(src[0]), int(tgt[0])) == (codes[expected[0]], codes[expected[1]])
        assert not set(codes.values()) & {int(i) for i in [*src[1:], *tgt[1:]]}  # nowhere else
        assert len(src) == train.src_lengths[index] and len(tgt) == train.tgt_lengths[index]
    english, spanish = train.example(0), train.example(len(train.parts[0]))  # pair 0 both ways
    assert english[0][1:].tolist() == spanish[1][1:].tolist() and english[1][1:].tolist() == spanish[0][1:].tolist()
    for index in range(len(data.dev)):
        src, tgt = data.dev[index]
        assert (int(src[0]), int(tgt[0])) == (codes["es"], codes["en"])
    assert data.dev_directions == [("es", "en")] and data.tgt_tokenizer.for_language("en").prefix == (codes["en"],)
    assert data.dev_direction_ranges == [("es-en", range(len(data.dev)))]


def both_dev_directions(root: Path) -> list[dict[str, str]]:
    toy = root / "toy"
    return [{"src": str(toy / "dev.en"), "tgt": str(toy / "dev.es"), "src_lang": "en", "tgt_lang": "es"},
            {"src": str(toy / "dev.es"), "tgt": str(toy / "dev.en"), "src_lang": "es", "tgt_lang": "en"}]  # fmt: skip


def test_a_dev_set_per_direction_is_one_after_the_other_with_its_own_tokens(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.dev = both_dev_directions(tmp_path)
    data = load_data(config, run_dir=tmp_path / "run", max_tokens=64, seed=3).corpus
    codes, toy = data.src_tokenizer.languages, tmp_path / "toy"
    english = (toy / "dev.en").read_text(encoding="utf-8").splitlines()
    spanish = (toy / "dev.es").read_text(encoding="utf-8").splitlines()
    half = len(english)
    assert data.dev_directions == [("en", "es"), ("es", "en")]
    assert data.dev_direction_ranges == [("en-es", range(0, half)), ("es-en", range(half, 2 * half))]
    assert data.dev_src_texts == english + spanish and data.dev_ref_texts == spanish + english
    for index in range(2 * half):
        src, tgt = data.dev[index]
        expected = ("en", "es") if index < half else ("es", "en")
        assert (int(src[0]), int(tgt[0])) == (codes[expected[0]], codes[expected[1]])
        assert data.src_tokenizer.decode(src[1:-1].tolist()) == data.dev_src_texts[index]
    assert data.stats["dev"]["pairs"] == 2 * half and data.stats["dev[es-en]"]["pairs"] == half


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"train.1.tgt_lang": None}, "data.train[1] needs src_lang and tgt_lang"),
        ({"train.0.tag": "<bt>"}, "a multilingual run's sources start with their language token"),
        ({"dev.src_lang": None, "dev.tgt_lang": None}, "give data.dev its src_lang and tgt_lang too"),
        ({"dev.tgt_lang": None}, "data.dev needs both src_lang and tgt_lang, or neither"),
        ({"train.0.src_lang": "e n"}, "language code 'e n'"),
        ({"dev": [{"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "es"}, {"src": "c", "tgt": "d"}]},
         "data.dev[1] needs src_lang and tgt_lang: a list of dev sets holds one per direction"),
        ({"dev": [{"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "es"},
                  {"src": "c", "tgt": "d", "src_lang": "en", "tgt_lang": "es"}]}, "data.dev lists en-es twice"),
        ({"dev": [{"src": "a", "tgt": "b", "lang": "en"}]}, "data.dev[0] has unknown keys ['lang']"),
        ({"dev": []}, "data.dev must be {src: FILE, tgt: FILE}, or in a multilingual run a list"),
    ],
)
def test_incomplete_languages_are_one_line_errors(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(UserError, match=None) as error:
        training_corpora(_config(tmp_path, **changes))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_dev_languages_without_multilingual_corpora_are_refused(tmp_path: Path) -> None:
    config = _config(tmp_path)
    for entry in config.train:
        entry.src_lang = entry.tgt_lang = None
    with pytest.raises(UserError, match="data.dev names src_lang/tgt_lang but no training corpus does"):
        training_corpora(config)

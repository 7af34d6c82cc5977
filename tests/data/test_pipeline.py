"""prepare_training_data on a small corpus these tests write: filters, tokenizer reuse, caching."""

import logging
import random

import numpy as np
import pytest

from seq2seq.data.corpus import iter_corpus_lines
from seq2seq.data.pipeline import FilterSettings, length_filter, prepare_training_data
from seq2seq.data.vocabulary import TokenizerSettings
from seq2seq.errors import UserError

WORDS = ["el", "la", "de", "que", "y", "en", "los", "se", "del", "las", "un", "por", "con", "no", "una", "su"]


def _sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


@pytest.fixture
def corpus(tmp_path):
    """200 training pairs plus 4 that the filter must drop, and 20 dev pairs (one empty)."""
    rng = random.Random(0)
    src = [_sentence(rng, rng.randint(3, 12)) for _ in range(200)]
    tgt = [s.upper() for s in src]
    src += ["", "solo fuente", " ".join(["palabra"] * 12_500), "no"]  # a line of 100k characters
    tgt += ["SOLO DESTINO", "", "PALABRA", "MUCHAS PALABRAS AQUÍ MUCHAS PALABRAS AQUÍ"]
    dev_src = [_sentence(rng, 6) for _ in range(19)] + [""]
    dev_tgt = [s.upper() for s in dev_src[:-1]] + ["VACÍO"]
    files = {}
    for name, lines in [("train.x", src), ("train.y", tgt), ("dev.x", dev_src), ("dev.y", dev_tgt)]:
        files[name] = tmp_path / name
        files[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return files


def _prepare(corpus, out_dir, cache_dir, *, joint=True, **filters):
    return prepare_training_data(
        train_src=corpus["train.x"],
        train_tgt=corpus["train.y"],
        dev_src=corpus["dev.x"],
        dev_tgt=corpus["dev.y"],
        out_dir=out_dir,
        cache_dir=cache_dir,
        tokenizer=TokenizerSettings(vocab_size=90, model_type="bpe", joint=joint),
        filters=FilterSettings(**filters),
        progress=False,
    )


def test_filters_count_each_reason_and_dev_texts_match_the_dev_set(corpus, tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        data = _prepare(corpus, tmp_path / "run", tmp_path / "cache", max_tokens_per_side=100)
    assert len(data.train) == 200
    assert (
        "kept 200 of 204 pairs; removed: 2 empty, 1 longer than 100 tokens, 1 token ratio above 3"
        in caplog.text
    )
    assert len(data.dev) == len(data.dev_src_texts) == len(data.dev_ref_texts) == 19
    assert data.tgt_tokenizer.decode(data.dev[5][1]) == data.dev_ref_texts[5]
    assert data.src_tokenizer.decode(data.dev[5][0]) == data.dev_src_texts[5]
    assert data.joint and data.pad_id == 0 and data.eos_id == 3 and data.src_vocab_size == 90
    assert data.tokenizer_paths == [tmp_path / "run" / "spm.model"] and data.tokenizer_paths[0].is_file()
    assert (
        data.tokenizer_payload["tgt"] is None
        and data.tokenizer_payload["src"] == data.src_tokenizer.to_bytes()
    )
    assert (data.train.src_lengths >= 2).all()  # at least one token plus eos


def test_second_run_reuses_tokenizer_and_encodings(corpus, tmp_path, caplog):
    first = _prepare(corpus, tmp_path / "run", tmp_path / "cache")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        resumed = _prepare(corpus, tmp_path / "run", tmp_path / "cache")
    assert "tokenizer: reusing" in caplog.text and caplog.text.count("encoded corpus: cache hit") == 2
    caplog.clear()
    with caplog.at_level(logging.INFO):
        fresh_run = _prepare(corpus, tmp_path / "another_run", tmp_path / "cache")
    assert "tokenizer: cache hit" in caplog.text and "training" not in caplog.text
    for data in (resumed, fresh_run):
        assert data.src_tokenizer == first.src_tokenizer
        assert np.array_equal(data.train.parts[0].src_ids, first.train.parts[0].src_ids)


def test_changed_corpus_misses_the_cache(corpus, tmp_path, caplog):
    _prepare(corpus, tmp_path / "run1", tmp_path / "cache")
    corpus["train.x"].write_text(
        corpus["train.x"].read_text(encoding="utf-8").replace("el", "il"), encoding="utf-8"
    )
    caplog.clear()
    with caplog.at_level(logging.INFO):
        _prepare(corpus, tmp_path / "run2", tmp_path / "cache")
    assert "tokenizer: training" in caplog.text and "encoded corpus: cache miss" in caplog.text


def test_run_directory_with_other_tokenizer_settings_is_refused(corpus, tmp_path):
    _prepare(corpus, tmp_path / "run", None)
    with pytest.raises(UserError, match="holds a tokenizer trained with"):
        prepare_training_data(
            train_src=corpus["train.x"],
            train_tgt=corpus["train.y"],
            dev_src=corpus["dev.x"],
            dev_tgt=corpus["dev.y"],
            out_dir=tmp_path / "run",
            tokenizer=TokenizerSettings(vocab_size=80, model_type="bpe"),
            progress=False,
        )


@pytest.mark.parametrize("joint", [True, False])
def test_run_directory_with_a_tokenizer_of_another_corpus_is_refused(corpus, tmp_path, joint):
    """Same settings, other training text: the run directory's tokenizer is not reused for it."""
    _prepare(corpus, tmp_path / "run", None, joint=joint)
    saved = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    other = tmp_path / "other.x"
    other.write_text(corpus["train.x"].read_text(encoding="utf-8").replace("el", "il"), encoding="utf-8")
    with pytest.raises(UserError) as error:
        _prepare({**corpus, "train.x": other}, tmp_path / "run", None, joint=joint)
    message = str(error.value)
    assert str(corpus["train.x"]) in message and str(other) in message and "\n" not in message
    assert saved == {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    moved = tmp_path / "moved.x"  # the same text elsewhere is the same corpus
    moved.write_bytes(corpus["train.x"].read_bytes())
    _prepare({**corpus, "train.x": moved}, tmp_path / "run", None, joint=joint)


def test_separate_tokenizers(corpus, tmp_path):
    data = _prepare(corpus, tmp_path / "run", None, joint=False)
    assert not data.joint and data.src_tokenizer != data.tgt_tokenizer
    assert [p.name for p in data.tokenizer_paths] == ["spm.src.model", "spm.tgt.model"]
    assert data.tokenizer_payload["tgt"] == data.tgt_tokenizer.to_bytes()


def test_unprepared_corpus_points_to_seq2seq_prepare(tmp_path):
    with pytest.raises(UserError, match=r"train\.en does not exist; run `seq2seq-prepare data="):
        prepare_training_data(
            train_src=tmp_path / "train.en",
            train_tgt=tmp_path / "train.es",
            dev_src=tmp_path / "dev.en",
            dev_tgt=tmp_path / "dev.es",
            out_dir=tmp_path,
        )  # the message must point to seq2seq-prepare


def test_length_filter_ratio_applies_only_to_long_enough_pairs():
    keep, report = length_filter(
        np.array([1, 4, 10, 30, 0]),
        np.array([4, 1, 31, 9, 5]),
        max_tokens_per_side=30,
        max_token_ratio=3.0,
        min_tokens_for_ratio=5,
    )
    assert keep.tolist() == [0, 1]
    assert dict(report.removed) == {"empty": 1, "longer than 30 tokens": 1, "token ratio above 3": 1}
    assert report.kept == 2


def test_corpus_lines_are_normalised(tmp_path):
    (tmp_path / "in.txt").write_text("  a\u0301  b \n", encoding="utf-8")
    assert list(iter_corpus_lines(tmp_path / "in.txt")) == ["á b"]

"""data.temperature: T-sampling over the training corpora, counted over epochs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from toy_corpus import data_config, write_toy_corpus

from seq2seq.cli.config.data_config import temperature_setting
from seq2seq.cli.config.training_data import load_data
from seq2seq.data.mixing import temperature_weights
from seq2seq.errors import UserError


@pytest.mark.parametrize("temperature", [1.0, 2.0, 5.0, 1e9])
def test_the_shares_are_the_sizes_to_the_power_one_over_t(temperature: float) -> None:
    sizes = [100, 400, 1600]
    weights = temperature_weights(sizes, temperature)
    powered = [size ** (1 / temperature) for size in sizes]
    shares = [w * n / sum(sizes) for w, n in zip(weights, sizes)]
    assert shares == pytest.approx([p / sum(powered) for p in powered])
    assert sum(w * n for w, n in zip(weights, sizes)) == pytest.approx(sum(sizes))  # the epoch's size


def test_t_1_keeps_every_weight_at_1_and_a_large_t_is_uniform() -> None:
    assert temperature_weights([100, 400], 1.0) == pytest.approx([1.0, 1.0])
    assert temperature_weights([100, 400], 2.0) == pytest.approx([500 / 3 / 100, 1000 / 3 / 400])
    assert [w * n for w, n in zip(temperature_weights([100, 400], 1e12), [100, 400])] == pytest.approx([250, 250])
    assert temperature_weights([0, 50], 3.0) == [0.0, 1.0]


def _config(root: Path, **changes: object) -> OmegaConf:
    small, large = write_toy_corpus(root / "small", train=30), write_toy_corpus(root / "large", train=120, seed=1)
    config = data_config(
        train=[{"src": str(small / "train.en"), "tgt": str(small / "train.es"), "name": "small"},
               {"src": str(large / "train.en"), "tgt": str(large / "train.es"), "name": "large"}],
        dev={"src": str(small / "dev.en"), "tgt": str(small / "dev.es")}, cache_dir=root / "cache", temperature=2.0,
    )  # fmt: skip
    for key, value in changes.items():
        OmegaConf.update(config, key, value)
    return config


def test_each_epoch_draws_the_corpora_in_their_tempered_shares(tmp_path: Path) -> None:
    data = load_data(_config(tmp_path), run_dir=tmp_path / "run", max_tokens=64, seed=3)
    train = data.corpus.train
    sizes = [len(part) for part in train.parts]
    expected = [round(w * n) for w, n in zip(temperature_weights(sizes, 2.0), sizes)]
    assert expected[0] > sizes[0] and expected[1] < sizes[1]  # the small corpus is upsampled
    for epoch in range(3):
        drawn = [index for batch in data.train_batches.batches(epoch) for index in batch]
        counts = Counter(train.corpus_of(int(v) % len(train)) for v in drawn)
        assert [counts[0], counts[1]] == expected


def test_temperature_with_weights_or_out_of_range_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="has a weight; drop the weights or data.temperature"):
        load_data(_config(tmp_path, **{"train.1.weight": 2.0}), run_dir=tmp_path / "run", max_tokens=64, seed=3)
    for value in (0, -1.0, "hot", True):
        with pytest.raises(UserError, match="data.temperature"):
            temperature_setting(OmegaConf.create({"temperature": value}))

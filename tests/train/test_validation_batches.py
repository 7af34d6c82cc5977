"""Dev decoding batches at least MIN_DECODE_TOKENS source tokens whatever the training batch, and the
batch size does not change what validation scores."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from multilingual_model import OPTIONS, dev_validator, multilingual_checkpoint

from seq2seq.decode.options import SearchOptions
from seq2seq.train import validation
from seq2seq.train.validation import MIN_DECODE_TOKENS, Validator

TEXTS = ["in the beginning god created heaven", "the night was good", "water and land", "god saw the light"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return multilingual_checkpoint(tmp_path_factory.mktemp("model") / "model.pt")


def validator(checkpoint: Path, max_tokens: int) -> tuple[Validator, torch.nn.Module]:
    return dev_validator(checkpoint, TEXTS, SearchOptions(beam_size=1, **OPTIONS), max_tokens=max_tokens)


@pytest.mark.parametrize(("training", "decoding"), [(512, MIN_DECODE_TOKENS), (20000, 20000)])
def test_dev_decoding_batches_are_never_smaller_than_the_floor(
    checkpoint: Path, training: int, decoding: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    budgets = []
    search = validation.search_ids

    def recording(*args, **kwargs):
        budgets.append(kwargs["max_tokens"])
        return search(*args, **kwargs)

    monkeypatch.setattr(validation, "search_ids", recording)
    check, model = validator(checkpoint, training)
    check.dev_bleu(model)
    assert budgets == [decoding] and check.max_tokens == decoding  # tune_decoding reads check.max_tokens


def test_the_batch_size_does_not_change_the_scores(checkpoint: Path) -> None:
    small, model = validator(checkpoint, 1)
    small.max_tokens = 8  # one sentence per batch
    large, _ = validator(checkpoint, MIN_DECODE_TOKENS)
    one_by_one, together = small.dev_bleu(model), large.dev_bleu(model)
    assert [s["hyp"] for s in one_by_one["samples"]] == [s["hyp"] for s in together["samples"]]
    assert one_by_one["bleu"] == together["bleu"]

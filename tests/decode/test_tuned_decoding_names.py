"""Tuned decoding has one name: the names of earlier releases (MODEL_TUNED, ModelDecoding,
LoadedModel.decoding) still work for one release, each with one deprecation warning naming the new one."""

from __future__ import annotations

import warnings

import pytest
import torch
from decode_helpers import tiny_model

from seq2seq.decode import options, tuned_decoding
from seq2seq.decode.options import TUNED_SETTINGS
from seq2seq.decode.tuned_decoding import TunedDecoding
from seq2seq.inference.loading import LoadedModel


def test_old_names_warn_once_and_give_the_new_ones() -> None:
    with pytest.warns(DeprecationWarning, match="MODEL_TUNED is deprecated .* use TUNED_SETTINGS") as caught:
        assert options.MODEL_TUNED is TUNED_SETTINGS
    assert len(caught) == 1
    with pytest.warns(DeprecationWarning, match="ModelDecoding is deprecated .* use TunedDecoding"):
        assert tuned_decoding.ModelDecoding is TunedDecoding
    loaded = LoadedModel(tiny_model(), None, None, {}, 0, tuned_decoding={"values": {}})  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match="use LoadedModel.tuned_decoding"):
        assert loaded.decoding == {"values": {}}


def test_new_names_do_not_warn_and_unknown_names_still_fail() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TUNED_SETTINGS == ("length_penalty", "max_len_a")
        assert LoadedModel(torch.nn.Identity(), None, None, {}, 0).tuned_decoding is None  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        options.NO_SUCH_NAME  # noqa: B018

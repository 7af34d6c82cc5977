"""Attention pictures: one label per (pooled) column, and a PNG that shows the weights."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.image import imread

from seq2seq.attention_pictures import attention_figure, column_labels, save_attention_png


def test_pooled_columns_get_the_pieces_they_average():
    pieces = ["▁In", "▁the", "▁beginning", "</s>", "▁x"]
    assert column_labels(pieces, 1) == pieces
    assert column_labels(pieces, 2) == ["▁In▁the", "▁beginning</s>", "▁x"]
    assert column_labels(pieces, 3) == ["▁In▁the▁beginning", "</s>▁x"]


def test_figure_labels_match_columns_and_a_mismatch_is_refused(tmp_path):
    weights = torch.softmax(torch.randn(4, 3), dim=-1)  # (T, S') with S' = 3 pooled columns
    labels = column_labels(["a", "b", "c", "d", "e"], 2)
    figure = attention_figure(weights, labels, ["x", "y", "z", "</s>"])
    assert [tick.get_text() for tick in figure.axes[0].get_xticklabels()] == labels
    plt.close(figure)
    with pytest.raises(ValueError, match="5 source labels for 3 attention columns"):
        attention_figure(weights, ["a", "b", "c", "d", "e"], ["x", "y", "z", "</s>"])
    path = tmp_path / "attention.png"
    save_attention_png(path, weights, labels, ["x", "y", "z", "</s>"])
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert np.unique(image.reshape(-1, image.shape[-1]), axis=0).shape[0] > 20  # a heat map, not a blank

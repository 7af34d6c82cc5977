"""alignment=true and attention pictures (seq2seq.inference.attention_output.attention_position) read the same
attention as markup placement (seq2seq.inference.markup_text), for a model with guided alignment and for
one without: one rule (seq2seq.inference.alignment.alignment_position), not two."""

from __future__ import annotations

import pytest
from tiny_models import tiny_model_checkpoint

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.inference import alignment, markup_text
from seq2seq.inference.attention_output import AttentionOutput, attention_position

OPTIONS = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=6)
UNSET = AttentionOutput(alignment=True)  # translate.yaml's defaults: no layer or head named


@pytest.mark.parametrize(
    ("guidance", "expected"),
    [({}, (-2, None)), ({"alignment_layer": 0, "alignment_head": 1}, (0, 1))],
    ids=["without-guided-alignment", "with-guided-alignment"],
)
def test_alignments_and_markup_read_the_same_attention(tmp_path, monkeypatch, guidance, expected):
    checkpoint = tiny_model_checkpoint(tmp_path, step=1, sharpness=4.0, decoder_layers=3, **guidance)
    translator = Translator.from_checkpoint(checkpoint, options=OPTIONS)
    read: list[tuple[int, int | None]] = []

    def recording(model, pairs, **settings):
        read.append((settings["layer"], settings["head"]))
        return alignment.most_attended(model, pairs, **settings)

    monkeypatch.setattr(markup_text, "most_attended", recording)
    translator.translate(["in the <b>beginning</b> god"], markup="true")
    assert read == [expected]
    assert attention_position(UNSET, translator.model) == expected

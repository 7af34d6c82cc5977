"""seq2seq-export shortlist=FILE: the shortlist becomes CTranslate2's vocabulary map (vmap.txt: the
always-kept pieces after an empty source, then a line per source piece with its candidates), the engine
translates with it (use_vmap), and a map that holds every piece CTranslate2's own greedy output uses
gives the same output; a decoder-only model is refused by name, and so is our shortlist file given to an
exported model (it has its map)."""

from __future__ import annotations

import pytest
import torch
from test_export_decoder_only import decoder_only_model  # the decoder-only export tests' model
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.decode.shortlist import Shortlist, tokenizer_digest
from seq2seq.errors import UserError
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.inference.translator import Translator

pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")

OPTIONS = {"beam_size": 1, "max_len_a": 0.0, "max_len_b": 10}
TEXTS = sentences(6, seed=8)


def shortlist_file(tokenizer, path, targets: list[int], rows: int = 2) -> None:
    """Every source token maps to `targets`; `rows` of them are frequent."""
    digest = tokenizer_digest(tokenizer.to_bytes())
    table = torch.tensor([targets] * tokenizer.vocab_size, dtype=torch.int32)
    frequent = torch.tensor(targets[:rows], dtype=torch.int32)
    always = torch.tensor([tokenizer.unk_id, tokenizer.eos_id], dtype=torch.int32)
    Shortlist(table, frequent, always, tokenizer.vocab_size, (digest, digest)).save(path)


def test_the_map_is_written_used_and_keeps_the_output_when_it_holds_every_piece(tmp_path) -> None:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=2)
    plain = Translator.from_checkpoint(export_ctranslate2(checkpoint, tmp_path / "plain"), options=OPTIONS)
    assert not plain.engine.use_vmap
    expected = [t.text for t in plain.translate(TEXTS)]
    used = sorted({tokenizer.piece_to_id(p) for text in expected for p in tokenizer.pieces(text)} - {0})
    shortlist_file(tokenizer, tmp_path / "all.pt", used)
    mapped_dir = export_ctranslate2(checkpoint, tmp_path / "mapped", shortlist=tmp_path / "all.pt")
    lines = (mapped_dir / "vmap.txt").read_text(encoding="utf-8").splitlines()
    pieces = [tokenizer.id_to_piece(i) for i in used]
    specials = [tokenizer.id_to_piece(tokenizer.unk_id), tokenizer.id_to_piece(tokenizer.eos_id)]
    assert lines[0] == "\t" + " ".join(pieces[:2] + specials)
    assert lines[1] == tokenizer.id_to_piece(0) + "\t" + " ".join(pieces)
    assert len(lines) == 1 + tokenizer.vocab_size
    mapped = Translator.from_checkpoint(mapped_dir, options=OPTIONS)
    assert mapped.engine.use_vmap
    assert [t.text for t in mapped.translate(TEXTS)] == expected

    shortlist_file(tokenizer, tmp_path / "few.pt", used[:3], rows=1)  # too few pieces: output changes
    narrow = Translator.from_checkpoint(
        export_ctranslate2(checkpoint, tmp_path / "narrow", shortlist=tmp_path / "few.pt"), options=OPTIONS
    )
    allowed = set(pieces[:3])
    for translation in narrow.translate(TEXTS):
        assert set(tokenizer.pieces(translation.text)) <= allowed


def test_a_decoder_only_model_is_refused(tmp_path) -> None:
    tokenizer = tiny_tokenizer()
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", decoder_only_model(tokenizer), tokenizer, step=2)
    shortlist_file(tokenizer, tmp_path / "sl.pt", [4, 5])
    with pytest.raises(UserError, match="vocabulary map for encoder-decoder models only"):
        export_ctranslate2(checkpoint, tmp_path / "out", shortlist=tmp_path / "sl.pt")


def test_our_shortlist_file_is_refused_for_an_exported_model(tmp_path) -> None:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=2)
    shortlist_file(tokenizer, tmp_path / "sl.pt", [4, 5])
    exported = export_ctranslate2(checkpoint, tmp_path / "ct2")
    with pytest.raises(UserError, match=r"^shortlist= works with engine=torch; CTranslate2 has its own"):
        Translator.from_checkpoint(exported, shortlist=tmp_path / "sl.pt")

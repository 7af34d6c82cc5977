"""An export's seq2seq.json as earlier releases wrote it still reads: its tuned decoding, stored under
`decoding` then, comes back under `tuned_decoding` (seq2seq.decode.tuned_decoding.PAYLOAD_KEY)."""

from __future__ import annotations

import json
from pathlib import Path

from seq2seq.decode.tuned_decoding import PAYLOAD_KEY
from seq2seq.inference.exported import FORMAT, METADATA_FILE, VERSION, read_metadata

RECORD = {"values": {"length_penalty": 1.4, "max_len_a": 1.2}, "chosen": True}


def write_metadata(directory: Path, **fields: object) -> Path:
    metadata = {"format": FORMAT, "version": VERSION, "joint": True, "max_positions": 64, **fields}
    (directory / METADATA_FILE).write_text(json.dumps(metadata), encoding="utf-8")
    return directory


def test_an_earlier_exports_decoding_is_its_tuned_decoding(tmp_path: Path) -> None:
    metadata = read_metadata(write_metadata(tmp_path, decoding=RECORD))
    assert PAYLOAD_KEY == "tuned_decoding" and metadata[PAYLOAD_KEY] == RECORD and "decoding" not in metadata
    assert metadata["family"] == "encoder_decoder"  # none recorded: exports before decoder-only models


def test_a_current_export_reads_as_written(tmp_path: Path) -> None:
    metadata = read_metadata(write_metadata(tmp_path, tuned_decoding=RECORD, family="decoder_only"))
    assert metadata[PAYLOAD_KEY] == RECORD and metadata["family"] == "decoder_only"

"""ParallelDataset storage and collation into the batch layout the model and loss expect."""

import numpy as np
import pytest
import torch

from seq2seq.data.collate import collate, make_batch
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.token_arrays import CorruptArrays, EncodedWriter, open_encoded

EOS = 3


@pytest.fixture
def dataset():
    return ParallelDataset.from_sequences(
        [[10, 11], [12], [], [13, 14, 15]], [[20], [21, 22, 23], [24], []], eos_id=EOS
    )


def test_examples_end_with_eos_and_lengths_count_it(dataset):
    assert len(dataset) == 4
    assert dataset[0][0].tolist() == [10, 11, 3] and dataset[0][1].tolist() == [20, 3]
    assert dataset[2][0].tolist() == [3] and dataset[-1][1].tolist() == [3]
    assert dataset.src_lengths.tolist() == [3, 2, 1, 4] and dataset.tgt_lengths.tolist() == [2, 4, 2, 1]
    assert dataset.n_tokens == 10 + 9
    with pytest.raises(IndexError):
        dataset[4]


def test_subset_keeps_the_given_order(dataset):
    part = dataset.subset([3, 0])
    assert [part[i][0].tolist() for i in range(2)] == [[13, 14, 15, 3], [10, 11, 3]]
    assert part.tgt_lengths.tolist() == [1, 2]
    assert len(dataset.subset([])) == 0


def test_save_and_load_round_trip(dataset, tmp_path):
    writer = EncodedWriter(tmp_path / "d", {"src": np.uint16, "tgt": np.uint16})
    tokens = {"src": dataset.src_ids, "tgt": dataset.tgt_ids}
    writer.append(tokens, {"src": dataset.src_lengths, "tgt": dataset.tgt_lengths})
    writer.close()
    loaded = open_encoded(tmp_path / "d")
    assert all((a == b).all() for i in range(4) for a, b in zip(loaded[i], dataset[i]))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "meta.json").write_bytes(b"junk")
    with pytest.raises(CorruptArrays, match=r"meta\.json"):
        open_encoded(tmp_path / "broken")


def test_collate_layout(dataset):
    batch = make_batch(dataset, [0, 1], pad_id=0, bos_id=2, eos_id=EOS)
    assert batch.src.tolist() == [[10, 11, 3], [12, 3, 0]]
    assert batch.tgt_in.tolist() == [[2, 20, 0, 0], [2, 21, 22, 23]]
    assert batch.tgt_out.tolist() == [[20, 3, 0, 0], [21, 22, 23, 3]]
    assert batch.n_tgt_tokens == 6 and batch.indices == [0, 1] and len(batch) == 2
    assert batch.src.dtype == torch.int64
    moved = batch.to("cpu")
    assert torch.equal(moved.tgt_out, batch.tgt_out) and moved.n_tgt_tokens == 6


def test_collate_rejects_examples_without_eos():
    with pytest.raises(ValueError, match="does not end with eos"):
        collate([(np.array([5, 6]), np.array([7, 3]))], pad_id=0, bos_id=2, eos_id=EOS)
    with pytest.raises(ValueError, match="empty list"):
        collate([], pad_id=0, bos_id=2, eos_id=EOS)

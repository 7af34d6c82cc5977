"""Token links for guided alignment: words read off pieces, word links spread over their pieces, one
cached build per encoded corpus, carried through subsets, tags and batches."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from toy_corpus import LEXICON, write_toy_corpus

from seq2seq.data import piece_links
from seq2seq.data.collate import collate
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.mixing import MixedCorpus
from seq2seq.data.piece_links import PieceLinks, piece_words, token_links, word_texts
from seq2seq.data.pipeline import prepare_training_data
from seq2seq.data.vocabulary import TokenizerSettings
from seq2seq.errors import UserError


@pytest.mark.parametrize(
    "pieces, owners, texts",
    [
        (["▁In", "▁the", "▁begin", "ning"], [0, 1, 2, 2], ["In", "the", "beginning"]),
        (["▁earth", "."], [0, 1], ["earth", "."]),
        (["▁", "(", "God", ")."], [0, 0, 1, 2], ["(", "God", ")."]),
        (["▁día", "s", ",", "▁y"], [0, 0, 1, 2], ["días", ",", "y"]),
        (["no", "▁"], [0, 1], ["no", "▁"]),
        ([], [], []),
    ],
)
def test_words_are_read_off_the_pieces(pieces: list[str], owners: list[int], texts: list[str]) -> None:
    assert piece_words(pieces) == owners
    assert word_texts(pieces, owners) == texts


def test_a_word_link_links_every_piece_of_both_words_and_eos_is_linked_to_eos() -> None:
    links = token_links([(0, 1), (2, 0), (9, 9)], src_owners=[0, 1, 1, 2], tgt_owners=[0, 1, 1])
    # source word 2 = piece 3; target word 1 = pieces 1, 2; eos: source position 4, target 3; (9, 9) no word
    assert links.tolist() == [[0, 1], [0, 2], [3, 0], [4, 3]]


def _prepare(corpus: Path, tmp_path: Path, **changes) -> object:
    arguments = dict(
        train_src=corpus / "train.en", train_tgt=corpus / "train.es", dev_src=corpus / "dev.en",
        dev_tgt=corpus / "dev.es", out_dir=tmp_path / "run", cache_dir=tmp_path / "cache",
        tokenizer=TokenizerSettings(vocab_size=60, model_type="bpe"), progress=False, alignment=True,
    )  # fmt: skip
    return prepare_training_data(**{**arguments, **changes})


def _diagonal(sources: list[list[str]], targets: list[list[str]]) -> list[list[tuple[int, int]]]:
    """A stand-in aligner: word i with word i."""
    return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(sources, targets)]


def test_prepare_links_every_training_pair_once_and_reads_them_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = write_toy_corpus(tmp_path / "corpus", train=60)
    calls: list[int] = []
    monkeypatch.setattr(piece_links, "align_words", lambda s, t: calls.append(len(s)) or _diagonal(s, t))
    data = _prepare(corpus, tmp_path)
    assert calls == [60] and data.dev.links is None
    tokenizer = data.src_tokenizer
    for index in range(len(data.train)):
        src, tgt = data.train[index]
        src_pieces = [tokenizer.id_to_piece(int(i)) for i in src[:-1]]
        tgt_pieces = [tokenizer.id_to_piece(int(i)) for i in tgt[:-1]]
        src_owners, tgt_owners = piece_words(src_pieces), piece_words(tgt_pieces)
        words = min(len(set(src_owners)), len(set(tgt_owners)))
        expected = token_links([(i, i) for i in range(words)], src_owners, tgt_owners)
        assert data.train.example_links(index).tolist() == expected.tolist()
    with caplog.at_level(logging.INFO):
        again = _prepare(corpus, tmp_path)
    assert calls == [60] and "word links: cache hit" in caplog.text
    assert again.train.example_links(5).tolist() == data.train.example_links(5).tolist()


def test_damaged_links_are_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = write_toy_corpus(tmp_path / "corpus", train=30)
    calls: list[int] = []
    monkeypatch.setattr(piece_links, "align_words", lambda s, t: calls.append(len(s)) or _diagonal(s, t))
    _prepare(corpus, tmp_path)
    (meta,) = (tmp_path / "cache").glob("*.links-v1/meta.json")
    meta.write_text("{not json")
    data = _prepare(corpus, tmp_path)
    assert calls == [30, 30] and data.train.example_links(0) is not None


def test_alignment_without_a_cache_is_refused(tmp_path: Path) -> None:
    corpus = write_toy_corpus(tmp_path / "corpus", train=10)
    with pytest.raises(UserError, match="data.alignment needs data.cache_dir"):
        _prepare(corpus, tmp_path, cache_dir=None)


def test_eflomal_links_the_toy_corpus_words_to_their_translations(tmp_path: Path) -> None:
    """The real aligner on the toy corpus, whose Spanish is the English word for word, reversed."""
    corpus = write_toy_corpus(tmp_path / "corpus", train=300)
    data = _prepare(corpus, tmp_path, tokenizer=TokenizerSettings(vocab_size=60, model_type="word"))
    tokenizer, right, total = data.src_tokenizer, 0, 0
    for index in range(len(data.train)):
        src, tgt = data.train[index]
        for s, t in data.train.example_links(index)[:-1]:  # the last is eos with eos
            source, target = tokenizer.id_to_piece(int(src[s])), tokenizer.id_to_piece(int(tgt[t]))
            right += LEXICON[source.lstrip("▁")] == target.lstrip("▁")
            total += 1
    assert total > 1000 and right / total > 0.95


def _links(rows: list[list[tuple[int, int]]]) -> PieceLinks:
    offsets = np.cumsum([0] + [len(r) for r in rows])
    flat = np.array([pair for row in rows for pair in row], dtype=np.int32).reshape(-1, 2)
    return PieceLinks(flat[:, 0], flat[:, 1], offsets)


def test_subsets_tags_and_noise_keep_links_right() -> None:
    dataset = ParallelDataset.from_sequences([[5, 6], [7], [8, 9]], [[10], [11, 12], [13]], eos_id=3)
    dataset = dataset.with_links(_links([[(0, 0), (2, 1)], [(0, 1), (1, 2)], [(1, 0), (2, 1)]]))
    subset = dataset.subset([2, 0])
    assert subset.links_of(0).tolist() == [[1, 0], [2, 1]] and subset.links_of(1).tolist() == [[0, 0], [2, 1]]
    mix = MixedCorpus([subset, dataset], weights=[1.0, 1.0], tag_ids=[40, None], noises=[None, object()],
                      names=["tagged", "noised"])  # fmt: skip
    assert mix.example_links(0).tolist() == [[2, 0], [3, 1]]  # the tag is source position 0
    assert mix.example(0)[0].tolist() == [40, 8, 9, 3]
    assert mix.example_links(2) is None  # a noised corpus trains without links


def test_collate_gathers_the_links_as_row_target_source() -> None:
    examples = [(np.array([5, 6, 3]), np.array([7, 3])), (np.array([8, 3]), np.array([9, 10, 3]))]
    links = [np.array([[0, 0], [2, 1]]), None]
    batch = collate(examples, pad_id=0, bos_id=2, eos_id=3, links=links)
    assert batch.alignment.tolist() == [[0, 0, 0], [0, 1, 2]]
    assert collate(examples, pad_id=0, bos_id=2, eos_id=3).alignment is None
    empty = collate(examples, pad_id=0, bos_id=2, eos_id=3, links=[None, None]).alignment
    assert empty.shape == (0, 3) and empty.dtype == torch.int64

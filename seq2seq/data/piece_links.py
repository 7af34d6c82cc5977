"""Token links of every stored pair of an encoded corpus, for guided alignment training: eflomal's word
alignments (seq2seq.data.word_alignment, an optional extra) mapped onto the tokenizer's pieces. Built
once beside the encoded arrays it belongs to and mapped read-only, like them:

    <encoded dir>.links-v1/src.npy      int32, per link: the source token's position
    <encoded dir>.links-v1/tgt.npy      int32, per link: the target token's position
    <encoded dir>.links-v1/offsets.npy  int64, pairs + 1: pair i's links are [offsets[i], offsets[i + 1])
    <encoded dir>.links-v1/meta.json    format, version, pairs, links

The encoded directory's name holds the content hash of the corpus and of the tokenizers, so the links
of a changed corpus or tokenizer are never read. Words are read off the pieces: a word starts at a
piece that begins with "▁" and wherever letters or digits meet other characters ("earth." is two words),
so a piece belongs to exactly one word. A word link (s, t) links every piece of word s to every piece
of word t, and each pair's two eos tokens are linked to each other.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.token_arrays import CorruptArrays, NpyAppender
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.data.word_alignment import Links, align_words
from seq2seq.files import build_directory_atomically

log = logging.getLogger(__name__)

FORMAT, VERSION = "seq2seq-piece-links", 1
CHUNK_PAIRS = 100_000  # pairs eflomal aligns at once: bounds memory; its statistics want many pairs


class PieceLinks:
    """Every stored pair's token links: `of(row)` is an (L, 2) array of (source, target) positions."""

    def __init__(self, src: np.ndarray, tgt: np.ndarray, offsets: np.ndarray) -> None:
        self.src, self.tgt, self.offsets = src, tgt, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def of(self, row: int) -> np.ndarray:
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        return np.stack([self.src[start:end], self.tgt[start:end]], axis=1)  # (L, 2)


def piece_words(pieces: Sequence[str]) -> list[int]:
    """Which word each piece belongs to (0, 1, ...): a word starts at a piece beginning with "▁" and
    where a letter or digit meets another character."""
    owners: list[int] = []
    word, previous = -1, ""
    for piece in pieces:
        text = piece.lstrip("▁")
        if word < 0 or piece.startswith("▁") or _kinds_differ(previous[-1:], text[:1]):
            word += 1
        owners.append(word)
        previous = text if piece.startswith("▁") else previous + text
    return owners


def _kinds_differ(before: str, after: str) -> bool:
    """Whether a letter or digit meets another character (nothing on either side meets nothing)."""
    return bool(before and after) and before.isalnum() != after.isalnum()


def word_texts(pieces: Sequence[str], owners: Sequence[int]) -> list[str]:
    """The words `piece_words` found, as text (a word of only "▁" is written "▁": eflomal needs a token)."""
    texts = [""] * (owners[-1] + 1 if owners else 0)
    for piece, owner in zip(pieces, owners):
        texts[owner] += piece.replace("▁", "")
    return [text or "▁" for text in texts]


def token_links(word_links: Links, src_owners: Sequence[int], tgt_owners: Sequence[int]) -> np.ndarray:
    """Word links -> (source position, target position) links of their pieces, plus eos with eos (the
    positions after the last pieces). Shapes: -> (L, 2) int32, sorted."""
    src_pieces: dict[int, list[int]] = {}
    tgt_pieces: dict[int, list[int]] = {}
    for position, owner in enumerate(src_owners):
        src_pieces.setdefault(owner, []).append(position)
    for position, owner in enumerate(tgt_owners):
        tgt_pieces.setdefault(owner, []).append(position)
    pairs = {(s, t) for ws, wt in word_links for s in src_pieces.get(ws, ()) for t in tgt_pieces.get(wt, ())}
    pairs.add((len(src_owners), len(tgt_owners)))
    return np.array(sorted(pairs), dtype=np.int32).reshape(-1, 2)


def corpus_links(
    encoded: ParallelDataset,
    directory: Path,
    *,
    tokenizers: tuple[TextTokenizer, TextTokenizer],
    progress: bool = True,
) -> PieceLinks:
    """The links of every pair `encoded` stores (all of them: filters choose rows afterwards), mapped from
    `directory`, built there first (eflomal; minutes for a million pairs) when it is missing."""
    cached = _open(directory)
    if cached is not None and len(cached) == len(encoded.src_offsets) - 1:
        log.info("word links: cache hit %s", directory)
        return cached
    log.info("word links: aligning %d pairs with eflomal into %s", len(encoded.src_offsets) - 1, directory)
    build_directory_atomically(
        directory, lambda folder: _build(encoded, folder, tokenizers, progress), what="word links"
    )
    built = _open(directory)
    if built is None:
        raise CorruptArrays(f"{directory} was just built but cannot be read")
    return built


def _build(
    encoded: ParallelDataset, folder: Path, tokenizers: tuple[TextTokenizer, TextTokenizer], progress: bool
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    vocabularies = [np.array(t.pieces_of_vocabulary(), dtype=object) for t in tokenizers]
    out = {name: NpyAppender(folder / f"{name}.npy", np.int32) for name in ("src", "tgt")}
    offsets = NpyAppender(folder / "offsets.npy", np.int64)
    offsets.append(np.zeros(1, dtype=np.int64))
    pairs = len(encoded.src_offsets) - 1
    with tqdm(desc="align words", total=pairs, unit="sent", unit_scale=True, disable=not progress) as bar:
        for start in range(0, pairs, CHUNK_PAIRS):
            rows = range(start, min(pairs, start + CHUNK_PAIRS))
            for links in _chunk_links(encoded, rows, vocabularies):
                out["src"].append(links[:, 0])
                out["tgt"].append(links[:, 1])
                offsets.append(np.array([out["src"].length], dtype=np.int64))
            bar.update(len(rows))
    for appender in (*out.values(), offsets):
        appender.close()
    meta = {"format": FORMAT, "version": VERSION, "pairs": pairs, "links": out["src"].length}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _chunk_links(encoded: ParallelDataset, rows: range, vocabularies: list[np.ndarray]) -> list[np.ndarray]:
    """Token links of the stored pairs `rows`, eflomal aligning their words together."""
    owners: list[tuple[list[int], list[int]]] = []
    texts: list[tuple[list[str], list[str]]] = []
    for row in rows:
        sides = []
        for ids, offsets, vocabulary in ((encoded.src_ids, encoded.src_offsets, vocabularies[0]),
                                         (encoded.tgt_ids, encoded.tgt_offsets, vocabularies[1])):  # fmt: skip
            pieces = vocabulary[np.asarray(ids[offsets[row] : offsets[row + 1] - 1], dtype=np.int64)]
            sides.append((pieces, piece_words(pieces)))
        owners.append((sides[0][1], sides[1][1]))
        texts.append((word_texts(*sides[0]), word_texts(*sides[1])))
    word_links = align_words([src for src, _ in texts], [tgt for _, tgt in texts])
    return [token_links(links, *pair_owners) for links, pair_owners in zip(word_links, owners)]


def _open(directory: Path) -> PieceLinks | None:
    """The links stored in `directory`, or None when it is missing or damaged (then removed)."""
    if not directory.exists():
        return None
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"format {meta.get('format')!r} version {meta.get('version')!r}")
        arrays = [np.load(directory / f"{name}.npy", mmap_mode="r") for name in ("src", "tgt", "offsets")]
        src, tgt, offsets = arrays
        if len(src) != meta["links"] or len(tgt) != meta["links"] or len(offsets) != meta["pairs"] + 1:
            raise ValueError(f"arrays disagree with meta.json {meta}")
    except (OSError, ValueError, KeyError, EOFError) as error:
        log.warning("word links: %s is incomplete or damaged (%s); rebuilding it", directory, error)
        shutil.rmtree(directory, ignore_errors=True)
        return None
    return PieceLinks(src, tgt, offsets)

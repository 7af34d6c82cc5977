"""The streaming encoder: chunked and parallel builds equal one-piece encoding, gzip equals plain text,
interrupted builds leave nothing a later run trusts, training maps the arrays, bad input stays one line."""

from __future__ import annotations

import gzip
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from seq2seq.data.binarize import build_encoded, encoded_corpus
from seq2seq.data.corpus import read_parallel
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.pipeline import prepare_training_data
from seq2seq.data.token_arrays import open_encoded
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.data.vocabulary import TokenizerSettings
from seq2seq.errors import UserError

WORDS = "la casa de mi padre tiene muchas moradas y el camino es largo pero la luz brilla".split()


def write_corpus(
    directory: Path, pairs: int, *, seed: int = 0, final_newline: bool = True
) -> tuple[Path, Path]:
    """`pairs` random pairs, every 17th source line empty, the last line optionally without newline."""
    rng = random.Random(seed)
    src = [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) if i % 17 else "" for i in range(pairs)]
    tgt = [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))).upper() for _ in range(pairs)]
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "train.x", directory / "train.y"
    for path, lines in zip(paths, (src, tgt)):
        path.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    src, tgt = write_corpus(tmp_path_factory.mktemp("tok"), 300)
    texts = src.read_text(encoding="utf-8").split("\n") + tgt.read_text(encoding="utf-8").split("\n")
    return Tokenizer.train(texts, vocab_size=60, model_type="bpe")


def one_piece(src: Path, tgt: Path, tokenizer: Tokenizer) -> ParallelDataset:
    """The reference: read whole files, encode every sentence at once, flatten in memory."""
    sources, targets = read_parallel(src, tgt)
    return ParallelDataset.from_sequences(
        tokenizer.encode_batch(sources), tokenizer.encode_batch(targets), eos_id=tokenizer.eos_id
    )


def assert_same_arrays(a: ParallelDataset, b: ParallelDataset) -> None:
    for name in ("src_ids", "src_offsets", "tgt_ids", "tgt_offsets"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("final_newline", [True, False])
@pytest.mark.parametrize(("chunk_pairs", "workers"), [(1000, 1), (7, 1), (50, 2), (13, 2)])
def test_chunked_parallel_encoding_equals_one_piece(tmp_path, tokenizer, chunk_pairs, workers, final_newline):
    src, tgt = write_corpus(tmp_path / "corpus", 200, final_newline=final_newline)
    stats = build_encoded(
        src, tgt, tmp_path / "arrays", tokenizers=(tokenizer, tokenizer), encoding_errors="strict",
        workers=workers, chunk_pairs=chunk_pairs, progress=False,
    )  # fmt: skip
    built = open_encoded(tmp_path / "arrays")
    assert_same_arrays(built, one_piece(src, tgt, tokenizer))
    assert built.src_ids.dtype == np.uint16 and stats.pairs == 200 and stats.empty_pairs == 12
    assert np.array_equal(np.load(tmp_path / "arrays" / "src.ids.npy"), built.src_ids)  # standard .npy


def test_gzip_corpus_gives_the_same_arrays(tmp_path, tokenizer):
    src, tgt = write_corpus(tmp_path / "plain", 120)
    zipped = []
    for path in (src, tgt):
        target = tmp_path / "gz" / f"{path.name}.gz"
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(gzip.compress(path.read_bytes()))
        zipped.append(target)
    plain, _ = encoded_corpus(src, tgt, src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, progress=False)
    packed, _ = encoded_corpus(*zipped, src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, progress=False)
    assert_same_arrays(plain, packed)


def test_cache_is_mapped_and_filtering_shares_the_tokens(tmp_path, tokenizer):
    src, tgt = write_corpus(tmp_path / "corpus", 150)
    dataset, _ = encoded_corpus(
        src,
        tgt,
        src_tokenizer=tokenizer,
        tgt_tokenizer=tokenizer,
        cache_dir=tmp_path / "cache",
        progress=False,
    )
    assert isinstance(dataset.src_ids, np.memmap) and not dataset.src_ids.flags.writeable
    part = dataset.subset(np.flatnonzero(dataset.src_lengths > 1))
    assert part.src_ids is dataset.src_ids and part.tgt_ids is dataset.tgt_ids  # an index, not a copy
    assert len(part) < len(dataset) and part[0][0].tolist() == dataset[int(part.rows[0])][0].tolist()


def test_truncated_or_foreign_cache_is_rebuilt_not_loaded(tmp_path, tokenizer, caplog):
    src, tgt = write_corpus(tmp_path / "corpus", 90)
    options = dict(
        src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, cache_dir=tmp_path / "cache", progress=False
    )
    first, _ = encoded_corpus(src, tgt, **options)
    expected = {name: np.array(getattr(first, name)) for name in ("src_ids", "tgt_offsets")}
    (directory,) = (tmp_path / "cache").iterdir()
    ids = directory / "src.ids.npy"
    ids.write_bytes(ids.read_bytes()[:-10])  # truncated
    again, _ = encoded_corpus(src, tgt, **options)
    assert "is incomplete or damaged" in caplog.text and "rebuilding it" in caplog.text
    assert np.array_equal(again.src_ids, expected["src_ids"])
    caplog.clear()
    (directory / "meta.json").write_text('{"format": "something else"}')  # foreign
    encoded_corpus(src, tgt, **options)
    assert "rebuilding it" in caplog.text


KILLABLE = """
import sys, time
from pathlib import Path
from seq2seq.data import binarize
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.data.vocabulary import TokenizerSettings
real = binarize.EncodedWriter.append
def slow(self, *args):
    real(self, *args)
    print("chunk", flush=True)
    time.sleep(0.2)
binarize.EncodedWriter.append = slow
tokenizer = Tokenizer.from_file(sys.argv[3])
binarize.encoded_corpus(sys.argv[1], sys.argv[2], src_tokenizer=tokenizer, tgt_tokenizer=tokenizer,
                        cache_dir=sys.argv[4], progress=False, workers=1, chunk_pairs=20)
"""


@pytest.mark.slow
def test_killed_build_leaves_nothing_trusted_and_a_rerun_finishes(tmp_path, tokenizer):
    src, tgt = write_corpus(tmp_path / "corpus", 400)
    tokenizer.save(tmp_path / "spm.model")
    cache = tmp_path / "cache"
    args = [sys.executable, "-c", KILLABLE, str(src), str(tgt), str(tmp_path / "spm.model"), str(cache)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    for _ in range(3):  # a few chunks are on disk
        assert process.stdout.readline().strip() == "chunk"
    process.send_signal(signal.SIGKILL)
    process.wait()
    leftovers = list(cache.iterdir())
    assert leftovers and all(p.name.startswith(".") and p.name.endswith(".tmp") for p in leftovers)
    options = dict(src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, progress=False)
    resumed, _ = encoded_corpus(src, tgt, cache_dir=cache, **options)
    (entry,) = cache.iterdir()  # the stale temporary is gone
    assert entry.name.startswith(f"{src.name}-{tgt.name}.") and not entry.name.endswith(".tmp")
    uninterrupted, _ = encoded_corpus(src, tgt, cache_dir=tmp_path / "fresh", **options)
    assert_same_arrays(resumed, uninterrupted)


def test_bad_input_keeps_its_one_line_errors(tmp_path, tokenizer):
    def encode(src: Path, tgt: Path, **options) -> None:
        encoded_corpus(src, tgt, src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, progress=False, **options)

    good_src, good_tgt = write_corpus(tmp_path / "good", 30)
    short = tmp_path / "short.y"
    short.write_text("uno\ndos\n", encoding="utf-8")
    with pytest.raises(UserError) as error:
        encode(good_src, short)
    assert str(error.value) == (
        f"{good_src} has 30 lines but {short} has 2; parallel files need exactly one translation per line"
    )
    broken = tmp_path / "broken.y"
    broken.write_bytes(good_tgt.read_bytes().replace(b"\n", b"\n\xe1", 1))
    with pytest.raises(UserError, match=rf"{broken}:2: invalid UTF-8 \(byte 0xe1 at column 1\)"):
        encode(good_src, broken, workers=2, chunk_pairs=5)
    for content, message in [(None, "no such file"), (b"", "is empty"), (b" \n\n", "is empty")]:
        path = tmp_path / f"case{len(message)}.y"
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(UserError, match=message):
            encode(good_src, path)
    huge = tmp_path / "huge.y"
    huge.write_text("casa " * 20_000 + "\n", encoding="utf-8")
    one = tmp_path / "one.x"
    one.write_text("la casa\n", encoding="utf-8")
    dataset, stats = encoded_corpus(
        one, huge, src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, progress=False
    )
    assert (
        dataset.tgt_lengths[0] > 20_000 and stats.longest_line_words == 20_000
    )  # read whole; filters drop it


def test_prepare_smoke_at_20k_pairs(tmp_path):
    """The whole prepare path (sample, tokenizer, parallel encoding, cache, filters) on 20,000 pairs."""
    src, tgt = write_corpus(tmp_path / "corpus", 20_000, seed=3)
    dev_src, dev_tgt = write_corpus(tmp_path / "dev", 50, seed=4)
    start = time.perf_counter()
    data = prepare_training_data(
        train_src=src, train_tgt=tgt, dev_src=dev_src, dev_tgt=dev_tgt, out_dir=None,
        tokenizer=TokenizerSettings(vocab_size=80, sample_sentences=5_000), cache_dir=tmp_path / "cache",
        workers=2, progress=False,
    )  # fmt: skip
    stats = data.stats["train"]
    assert stats["pairs"] == 20_000 and 0 < len(data.train) <= 20_000 - stats["empty_pairs"]
    assert (data.train.src_lengths > 1).all() and (data.train.tgt_lengths > 1).all()  # no empty side left
    assert isinstance(data.train.parts[0].src_ids, np.memmap) and data.train.parts[0].rows is not None
    first = time.perf_counter() - start
    again = prepare_training_data(
        train_src=src, train_tgt=tgt, dev_src=dev_src, dev_tgt=dev_tgt, out_dir=tmp_path / "run",
        tokenizer=TokenizerSettings(vocab_size=80, sample_sentences=5_000), cache_dir=tmp_path / "cache",
        progress=False,
    )  # fmt: skip
    assert np.array_equal(again.train.src_lengths, data.train.src_lengths)
    assert again.src_tokenizer == data.src_tokenizer and first < 120


def test_the_sample_is_the_same_for_both_directions(tmp_path):
    src, tgt = write_corpus(tmp_path / "corpus", 2_000, seed=5)
    dev_src, dev_tgt = write_corpus(tmp_path / "dev", 20, seed=6)
    common = dict(
        out_dir=None, tokenizer=TokenizerSettings(vocab_size=70, sample_sentences=600), progress=False
    )
    forward = prepare_training_data(train_src=src, train_tgt=tgt, dev_src=dev_src, dev_tgt=dev_tgt, **common)
    backward = prepare_training_data(train_src=tgt, train_tgt=src, dev_src=dev_tgt, dev_tgt=dev_src, **common)
    assert forward.src_tokenizer == backward.src_tokenizer


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs os.sched_getaffinity (Linux)")
def test_default_workers_are_the_usable_cores():
    from seq2seq.data.binarize import default_workers

    assert default_workers() == len(os.sched_getaffinity(0))

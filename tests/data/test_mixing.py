"""Several training corpora: weighted epochs (counted), tags on the source, noise that survives a resume."""

from collections import Counter

import numpy as np
import pytest
from toy_corpus import data_config, write_toy_corpus

from seq2seq.cli.config.data_config import cleaning_transforms, prepared_corpus, training_corpora
from seq2seq.cli.config.training_data import load_data
from seq2seq.data.batching import TokenBatchSampler
from seq2seq.data.dataset import ParallelDataset
from seq2seq.data.mixing import MixedCorpus
from seq2seq.errors import UserError


def _dataset(size: int, first_token: int) -> ParallelDataset:
    """`size` pairs whose source is (first_token + i,) and target (i,): the pair says where it came from."""
    return ParallelDataset.from_sequences(
        [[first_token + i] for i in range(size)], [[i + 10] for i in range(size)], eos_id=3
    )


def _mix(weights, sizes=(10, 40, 7)) -> MixedCorpus:
    parts = [_dataset(size, 1000 * (k + 1)) for k, size in enumerate(sizes)]
    return MixedCorpus(parts, weights=weights, tag_ids=[None] * len(sizes), noises=[None] * len(sizes),
                       names=[f"c{k}" for k in range(len(sizes))])  # fmt: skip


@pytest.mark.parametrize("weights", [(1.0, 0.5, 3.0), (2.0, 0.25, 1.5), (0.0, 1.0, 1.0)])
def test_an_epoch_draws_each_corpus_by_its_weight(weights):
    mix = _mix(weights)
    sampler = TokenBatchSampler(mix.src_lengths, mix.tgt_lengths, max_tokens=16, seed=5,
                                composition=mix.epoch_indices)  # fmt: skip
    for epoch in range(3):
        drawn = [v for batch in sampler.batches(epoch) for v in batch]
        assert len(drawn) == len(set(drawn))  # every example of an epoch is a distinct virtual index
        assert mix.counts(np.array(drawn)) == [round(w * n) for w, n in zip(weights, (10, 40, 7))]
        per_pair = Counter(v % len(mix) for v in drawn)
        for corpus, weight in enumerate(
            weights
        ):  # whole copies for everyone, the fraction drawn at most once
            start, stop = int(mix.starts[corpus]), int(mix.starts[corpus + 1])
            seen = [per_pair[i] for i in range(start, stop)]
            assert set(seen) <= {int(weight), int(weight) + 1}


@pytest.mark.parametrize("weights", [(1.0, 0.5, 3.0), (2.0, 0.25, 1.5)])
def test_no_batch_holds_a_pair_twice(weights):
    """Every example here has the same lengths, as a pair's upsampled copies do: sorting by length alone
    would put copies side by side; the sampler's rounds keep them in different batches."""
    mix = _mix(weights)
    sampler = TokenBatchSampler(mix.src_lengths, mix.tgt_lengths, max_tokens=64, seed=5,
                                composition=mix.epoch_indices)  # fmt: skip
    for epoch in range(3):
        batches = sampler.batches(epoch)
        assert max(len(batch) for batch in batches) >= 10  # batches big enough to hold repeats
        for batch in batches:
            pairs = [v % len(mix) for v in batch]
            assert len(pairs) == len(set(pairs)), f"epoch {epoch}: a pair twice in {sorted(pairs)}"


def test_a_state_from_another_packing_restarts_its_epoch(caplog):
    """A weighted run saved by a sampler that packed without rounds would get other batches now: it
    restarts the epoch with a warning instead of continuing mid-epoch in a different order."""
    mix = _mix((1.0, 0.5, 3.0))

    def sampler() -> TokenBatchSampler:
        return TokenBatchSampler(mix.src_lengths, mix.tgt_lengths, max_tokens=16, seed=5,
                                 composition=mix.epoch_indices)  # fmt: skip

    saved = sampler()
    next(iter(saved)), next(iter(saved))
    state = saved.state_dict()
    resumed = sampler()
    resumed.load_state_dict(state)
    assert resumed.position == state["position"] > 0 and not caplog.records
    older = sampler()
    older.load_state_dict({key: value for key, value in state.items() if key != "packing"})
    assert older.position == 0 and "restarting epoch" in caplog.text


def test_fractional_draws_change_from_epoch_to_epoch_and_follow_the_seed():
    mix = _mix((1.0, 0.5, 1.0))
    halves = [set(mix.epoch_indices(1, epoch).tolist()) for epoch in range(3)]
    assert halves[0] != halves[1] and halves[1] != halves[2]
    assert np.array_equal(mix.epoch_indices(1, 2), mix.epoch_indices(1, 2))
    assert not np.array_equal(mix.epoch_indices(1, 2), mix.epoch_indices(2, 2))


def test_examples_come_from_their_own_corpus():
    mix = _mix((1.0, 2.0, 1.0))
    for v in mix.epoch_indices(0, 0):
        src, tgt = mix.example(int(v))
        index = int(v) % len(mix)
        corpus = mix.corpus_of(index)
        local = index - int(mix.starts[corpus])
        assert src.tolist() == [1000 * (corpus + 1) + local, 3] and tgt.tolist() == [local + 10, 3]


def test_uniform_weights_keep_the_plain_sampler():
    mix = _mix((1.0, 1.0, 1.0))
    plain = TokenBatchSampler(mix.src_lengths, mix.tgt_lengths, max_tokens=16, seed=5)
    composed = TokenBatchSampler(mix.src_lengths, mix.tgt_lengths, max_tokens=16, seed=5,
                                 composition=mix.epoch_indices)  # fmt: skip
    assert mix.uniform and plain.batches(1) == composed.batches(1)


def _data_config(corpus_dir, tmp_path, *, extra):
    return data_config(
        train={"src": str(corpus_dir / "train.en"), "tgt": str(corpus_dir / "train.es")}, extra_train=extra,
        dev={"src": str(corpus_dir / "dev.en"), "tgt": str(corpus_dir / "dev.es")}, cache_dir=tmp_path / "cache",
    )


@pytest.fixture(scope="module")
def two_corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("mix")
    main, synthetic = (
        write_toy_corpus(root / "main", train=60),
        write_toy_corpus(root / "bt", train=40, seed=1),
    )
    extra = [{"src": str(synthetic / "train.en"), "tgt": str(synthetic / "train.es"), "tag": "<bt>",
              "weight": 1.5, "noise": {"drop": 0.2, "mask": 0.2, "shuffle_distance": 2}}]  # fmt: skip
    return _data_config(main, root, extra=extra), root


def test_a_tag_reaches_the_source_of_its_corpus_only(two_corpora, tmp_path):
    config, _ = two_corpora
    data = load_data(config, run_dir=tmp_path, max_tokens=64, seed=3)
    tokenizer, train = data.corpus.src_tokenizer, data.corpus.train
    tag = tokenizer.piece_to_id("<bt>")
    assert tag != tokenizer.unk_id and tokenizer.id_to_piece(tag) == "<bt>"  # one whole piece
    batch = data.make_batch(list(range(len(train))))
    starts = [train.corpus_of(i) for i in range(len(train))]
    assert all((int(row[0]) == tag) == (corpus == 1) for row, corpus in zip(batch.src, starts))
    assert starts.count(1) == 40 and int((batch.src == tag).sum()) == 40  # nowhere else


def test_noise_is_the_same_after_a_resume(two_corpora, tmp_path):
    config, _ = two_corpora

    def run(stop_after: int | None, state=None):
        data = load_data(config, run_dir=tmp_path / "run", max_tokens=64, seed=3)
        if state is not None:
            data.train_batches.load_state_dict(state)
        seen = []
        for epoch in range(data.train_batches.epoch, 2):
            data.train_batches.set_epoch(epoch)
            for indices in data.train_batches:
                seen.append(data.make_batch(indices).src.tolist())
                if stop_after is not None and len(seen) == stop_after:
                    return seen, data.train_batches.state_dict()
        return seen, None

    whole, _ = run(None)
    head, state = run(7)
    tail, _ = run(None, state)
    assert head + tail == whole
    noised = [row for batch in whole for row in batch]
    assert len({tuple(row) for row in noised}) > 0 and state["epoch"] == 0


def test_noise_differs_between_epochs_and_copies(two_corpora, tmp_path):
    config, _ = two_corpora
    data = load_data(config, run_dir=tmp_path, max_tokens=64, seed=3)
    train = data.corpus.train
    first = int(train.starts[1])  # the synthetic corpus's first pair, noised
    copies = [first, first + len(train)]  # two copies in one epoch (weight 1.5)
    drawn = [train.example(v, seed=3, epoch=e)[0].tolist() for e in range(4) for v in copies]
    assert len({tuple(x) for x in drawn}) > 1
    assert train.example(first, seed=3, epoch=0)[0].tolist() == drawn[0]  # a pure function of its key
    plain = train.example(int(train.starts[0]), seed=3, epoch=0)[0]
    assert plain.tolist() == train.parts[0][0][0].tolist()  # the main corpus has no noise


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([{"src": "a"}], "data.extra_train[0] must name its files"),
        ([{"src": "a", "tgt": "b", "weight": -1}], "weight=-1.0 must be 0 or more"),
        ([{"src": "a", "tgt": "b", "tag": "two words"}], "must be one token without spaces"),
        ([{"src": "a", "tgt": "b", "tag": "__bt__"}], "is named as a language token (__xx__)"),
        ([{"src": "a", "tgt": "b", "noise": {"drop": 1.5}}], "noise.drop=1.5 must be in [0, 1)"),
        ([{"src": "a", "tgt": "b", "noise": {"swap": 1}}], "it takes drop, mask and shuffle_distance"),
        ([{"src": "a", "tgt": "b", "wieght": 2}], "unknown keys ['wieght']"),
    ],
)
def test_bad_corpus_entries_are_one_line_errors(tmp_path, extra, message):
    config = _data_config(tmp_path, tmp_path, extra=extra)
    with pytest.raises(UserError, match=None) as error:
        training_corpora(config)
    assert message in str(error.value) and "\n" not in str(error.value)


def _with_duplicates(directory, copies: int = 3):
    """A toy corpus whose first 10 training pairs appear `copies` times more at the end."""
    write_toy_corpus(directory, train=50)
    for side in ("en", "es"):
        path = directory / f"train.{side}"
        lines = path.read_text(encoding="utf-8").splitlines()
        path.write_text("".join(line + "\n" for line in lines + lines[:10] * copies), encoding="utf-8")
    return directory


def test_transforms_clean_the_training_corpus_and_a_new_setting_rebuilds(tmp_path, caplog):
    corpus_dir = _with_duplicates(tmp_path / "dup")
    config = _data_config(corpus_dir, tmp_path, extra=[])
    plain = prepared_corpus(config, out_dir=None, progress=False)
    config.transforms = [{"_target_": "seq2seq.data.transforms.Deduplicate"}]
    with caplog.at_level("INFO"):
        cleaned = prepared_corpus(config, out_dir=None, progress=False)
    assert len(plain.train) == 80 and len(cleaned.train) == 50
    assert len(cleaned.dev) == len(plain.dev)  # dev is left alone unless transform_splits lists it
    built = {p.name for p in (tmp_path / "cache").glob("clean-*")}
    config.transforms = [{"_target_": "seq2seq.data.transforms.Deduplicate", "on": "source"}]
    prepared_corpus(config, out_dir=None, progress=False)
    assert len({p.name for p in (tmp_path / "cache").glob("clean-*")} - built) == 1  # a new cleaned copy


@pytest.mark.parametrize(
    ("transforms", "message"),
    [
        ([{"_target_": "os.remove", "path": "x"}], "needs a _target_ in seq2seq.*"),
        ([{"_target_": "seq2seq.data.transforms.Deduplicate", "on": "nothing"}], "cannot be built"),
        ([{"_target_": "seq2seq.data.transforms.Deduplicate", "size": 3}], "cannot be built"),
    ],
)
def test_bad_transforms_are_one_line_errors(tmp_path, transforms, message):
    config = _data_config(tmp_path, tmp_path, extra=[])
    config.transforms = transforms
    with pytest.raises(UserError) as error:
        cleaning_transforms(config)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_weights_that_round_to_an_empty_epoch_are_refused_and_a_corpus_left_out_is_said(caplog):
    """round(weight x pairs) examples per corpus: weights that give 0 in all would train 0 updates."""
    with pytest.raises(UserError, match=r"epoch of no pairs .*c0: weight 0.01 x 10 pairs.*raise"):
        _mix((0.01, 0.001, 0.0))
    with caplog.at_level("WARNING", logger="seq2seq.data.mixing"):
        mix = _mix((0.01, 1.0, 1.0))
    assert "corpus c0: weight 0.01 x 10 pairs rounds to no pair" in caplog.text
    assert mix.counts(mix.epoch_indices(seed=1, epoch=0)) == [0, 40, 7]

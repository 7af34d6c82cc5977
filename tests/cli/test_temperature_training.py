"""data.temperature over a real seq2seq-train run: the pairs each corpus gives the updates the trainer
makes follow the shares size^(1/T) / sum_k size_k^(1/T).

The run is the command a user starts, in a subprocess; a wrapper records what the trainer really trains
on (the virtual indices of the batches of every update, and the corpus boundaries of the training mix)
without changing it. The expected shares are computed here from the corpus files' line counts, not by
the code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from commands import ENV
from toy_corpus import tiny_train_overrides, write_toy_corpus

# Runs seq2seq.cli.train with the rest of the arguments, appending to the file named by the first one a
# JSON line with the training mix's corpus boundaries when it is built, and one per optimizer update with
# the epoch and the virtual indices of the pairs of the update's batches.
RECORD_UPDATES = """
import json, runpy, sys
from seq2seq.data import mixing
from seq2seq.train import loop
record = sys.argv.pop(1)
def write(entry):
    with open(record, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(entry) + "\\n")
build = mixing.MixedCorpus.__init__
def build_and_record(self, *args, **kwargs):
    build(self, *args, **kwargs)
    write({"starts": self.starts.tolist(), "names": self.names})
mixing.MixedCorpus.__init__ = build_and_record
update = loop.Trainer._update
def update_and_record(self, group):
    epoch = self.state.epoch
    update(self, group)
    write({"step": self.state.step, "epoch": epoch, "indices": [int(i) for b in group for i in b.indices]})
loop.Trainer._update = update_and_record
runpy.run_module("seq2seq.cli.train", run_name="__main__", alter_sys=True)
"""

SMALL, LARGE = 40, 360  # training pairs of the two corpora
EPOCHS = 2


@pytest.mark.slow
def test_a_run_trains_on_each_corpus_in_its_tempered_share(tmp_path: Path) -> None:
    small = write_toy_corpus(tmp_path / "small", train=SMALL, dev=8, test=2, seed=1)
    large = write_toy_corpus(tmp_path / "large", train=LARGE, dev=2, test=2, seed=2)
    record = tmp_path / "record.jsonl"
    overrides = tiny_train_overrides(
        small, tmp_path / "run",
        f"data.extra_train=[{{src: {large}/train.en, tgt: {large}/train.es, name: large}}]",
        "data.temperature=2", f"trainer.max_epochs={EPOCHS}", "trainer.max_updates=10000",
        "trainer.validate_every=10000", "trainer.validate_every_minutes=null", "trainer.save_every=10000",
        "trainer.validate_bleu=false", "trainer.log_every=100", "data.filter.max_token_ratio=100",
    )  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", RECORD_UPDATES, str(record), *overrides], cwd=tmp_path, env=ENV,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    entries = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    mixes = [entry for entry in entries if "starts" in entry]
    updates = [entry for entry in entries if "step" in entry]
    assert len(mixes) == 1 and mixes[0]["starts"] == [0, SMALL, SMALL + LARGE]  # the filter kept every pair
    assert [u["step"] for u in updates] == list(range(1, len(updates) + 1))
    assert sorted({u["epoch"] for u in updates}) == list(range(EPOCHS))  # whole epochs, then max_epochs

    sizes = np.array([SMALL, LARGE])
    starts, total = np.array(mixes[0]["starts"]), SMALL + LARGE
    per_epoch, drawn = [], []
    for epoch in range(EPOCHS):
        virtual = np.array([i for u in updates if u["epoch"] == epoch for i in u["indices"]])
        pairs = virtual % total
        corpus = np.searchsorted(starts, pairs, side="right") - 1
        per_epoch.append(np.bincount(corpus, minlength=2))
        times = Counter(pairs[corpus == 0].tolist())  # the small corpus: weight 2.5
        assert sorted(Counter(times.values()).items()) == [(2, SMALL // 2), (3, SMALL // 2)]
        assert len(set(pairs[corpus == 1].tolist())) == per_epoch[-1][1]  # the large one: no repeats
        drawn.append(({p for p, n in times.items() if n == 3}, set(pairs[corpus == 1].tolist())))
    assert drawn[0][0] != drawn[1][0] and drawn[0][1] != drawn[1][1]  # each epoch draws afresh
    trained = np.sum(per_epoch, axis=0)
    expected = sizes**0.5 / (sizes**0.5).sum()  # T = 2: 25% and 75%, where the sizes give 10% and 90%
    # Each epoch draws round(share * total) pairs of a corpus, and as many pairs as the corpora hold up
    # to that rounding: a share is off by under one pair per corpus, len(sizes) / total (0.5%); the
    # proportional shares are 30 times that away.
    tolerance = len(sizes) / total
    assert trained / trained.sum() == pytest.approx(expected, abs=tolerance)
    assert abs(trained[0] / trained.sum() - SMALL / total) > 10 * tolerance

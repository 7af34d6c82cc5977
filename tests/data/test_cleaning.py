"""clean_corpus: exact output files and counts, the cache (hit, new key, damaged or unfinished builds)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from seq2seq.data.cleaning import clean_corpus, clean_key
from seq2seq.data.transforms import (
    Deduplicate,
    DropIdentical,
    DropRepeats,
    MosesPunctuation,
    Pair,
    Result,
    Transform,
)
from seq2seq.errors import UserError
from seq2seq.files import this_host

SOURCES = ["He said, “Go”.", "Amen.", "Noooooooooo!", "He said, “Go”.", "The dog.", "A cat.", "Once more."]
TARGETS = ["Dijo: «Ve».", "amen", "¡No!", "Dijo: «Ve».", "El perro.", "Un gato.", "Otra vez."]


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    src, tgt = tmp_path / "train.en", tmp_path / "train.es"
    src.write_text("".join(line + "\n" for line in SOURCES), encoding="utf-8")
    tgt.write_text("".join(line + "\n" for line in TARGETS), encoding="utf-8")
    return src, tgt


def transforms() -> list[Transform]:
    return [MosesPunctuation(src_lang="en", tgt_lang="es"), DropIdentical(), DropRepeats(), Deduplicate()]


class Counting(Transform):
    """Keeps everything, and counts the pairs it was given (to tell a cache hit from a rebuild)."""

    name = "Counting"

    def __init__(self, *, fail_after: int | None = None) -> None:
        self.calls, self.fail_after = 0, fail_after

    def settings(self) -> dict:
        return {}

    def __call__(self, pairs: Sequence[Pair]) -> Result:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt  # as if the run were stopped mid-way
        return list(pairs)


def test_clean_corpus_writes_the_kept_pairs_and_a_summary(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    result = clean_corpus(*corpus, transforms(), cache_dir=tmp_path / "cache", chunk_pairs=2)
    assert result.src.parent.name.startswith("clean-") and result.src.parent.parent == tmp_path / "cache"
    assert (result.src.name, result.tgt.name) == ("train.en", "train.es")
    assert result.src.read_text(encoding="utf-8").splitlines() == ['He said, "Go."', "The dog.", "A cat.",
                                                                  "Once more."]  # fmt: skip
    assert result.tgt.read_text(encoding="utf-8").splitlines() == ['Dijo: "Ve".', "El perro.", "Un gato.",
                                                                  "Otra vez."]  # fmt: skip
    counts = [(t["name"], t["seen"], t["removed"], t["changed"]) for t in result.summary["transforms"]]
    assert counts == [("MosesPunctuation", 7, 0, 2), ("DropIdentical", 7, 1, 0), ("DropRepeats", 6, 1, 0),
                      ("Deduplicate", 5, 1, 0)]  # fmt: skip
    totals = {key: result.summary[key] for key in ("pairs_in", "pairs_out", "removed", "changed")}
    assert totals == {"pairs_in": 7, "pairs_out": 4, "removed": 3, "changed": 1}
    assert result.summary["transforms"][2]["settings"] == {"max_char_run": 8, "max_word_run": 4}
    assert result.summary["transforms"][3]["target"] == "seq2seq.data.transforms.Deduplicate"
    assert json.loads((result.src.parent / "summary.json").read_text(encoding="utf-8")) == result.summary


def test_the_log_has_one_line_per_transform(
    corpus: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="seq2seq.data.cleaning"):
        clean_corpus(*corpus, transforms(), cache_dir=tmp_path / "cache")
    assert "MosesPunctuation: changed 2 of 7 pairs" in caplog.messages
    assert "DropRepeats: removed 1 of 6 pairs" in caplog.messages


def test_a_second_call_is_a_cache_hit(
    corpus: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = clean_corpus(*corpus, [DropIdentical()], cache_dir=tmp_path)
    counting = Counting()
    key_before = clean_key(*corpus, [DropIdentical(), counting], "strict")
    built = clean_corpus(*corpus, [DropIdentical(), counting], cache_dir=tmp_path)
    assert counting.calls == 1 and built.src.parent.name == f"clean-{key_before}"
    with caplog.at_level(logging.INFO, logger="seq2seq.data.cleaning"):
        again = clean_corpus(*corpus, [DropIdentical(), counting], cache_dir=tmp_path)
    assert counting.calls == 1 and again == built and again.src.parent != first.src.parent
    assert any("cache hit" in message for message in caplog.messages)


def test_a_changed_setting_or_input_is_a_new_directory(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    one = clean_corpus(*corpus, [DropRepeats(max_char_run=8)], cache_dir=tmp_path)
    other = clean_corpus(*corpus, [DropRepeats(max_char_run=20)], cache_dir=tmp_path)
    assert one.src.parent != other.src.parent
    assert (one.summary["pairs_out"], other.summary["pairs_out"]) == (6, 7)
    corpus[0].write_text(corpus[0].read_text(encoding="utf-8").replace("cat", "cow"), encoding="utf-8")
    changed = clean_corpus(*corpus, [DropRepeats(max_char_run=8)], cache_dir=tmp_path)
    assert changed.src.parent != one.src.parent and "A cow." in changed.src.read_text(encoding="utf-8")


def test_a_line_count_mismatch_is_one_line(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    corpus[1].write_text("".join(line + "\n" for line in TARGETS[:-1]), encoding="utf-8")
    with pytest.raises(UserError, match=r"has 7 lines but .* has 6") as error:
        clean_corpus(*corpus, [DropIdentical()], cache_dir=tmp_path / "cache")
    assert "\n" not in str(error.value)
    assert not list((tmp_path / "cache").iterdir())  # nothing left that looks like a result


def test_an_interrupted_run_leaves_nothing_reusable(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(KeyboardInterrupt):
        clean_corpus(*corpus, [Counting(fail_after=1)], cache_dir=cache, chunk_pairs=2)
    assert not list(cache.iterdir())
    counting = Counting()
    final = cache / f"clean-{clean_key(*corpus, [counting], 'strict')}"
    killed = cache / f".{final.name}.{this_host()}.{dead_pid()}.abcdef.tmp"  # a run killed mid-way
    killed.mkdir()
    (killed / "summary.json").write_text("{}", encoding="utf-8")
    result = clean_corpus(*corpus, [counting], cache_dir=cache)
    assert counting.calls == 1 and result.src.parent == final and not killed.exists()
    assert result.summary["pairs_out"] == 7


def test_a_damaged_directory_is_rebuilt(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    result = clean_corpus(*corpus, [DropIdentical()], cache_dir=tmp_path)
    result.tgt.unlink()
    again = clean_corpus(*corpus, [DropIdentical()], cache_dir=tmp_path)
    assert again.tgt.read_text(encoding="utf-8").splitlines() == [t for t in TARGETS if t != "amen"]


def test_a_transform_must_answer_every_pair(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    class Short(Counting):
        name = "Short"

        def __call__(self, pairs: Sequence[Pair]) -> Result:
            return list(pairs)[1:]

    with pytest.raises(UserError, match="Short gave 6 results for 7 pairs"):
        clean_corpus(*corpus, [Short()], cache_dir=tmp_path)
    with pytest.raises(UserError, match="is not a transform"):
        clean_corpus(*corpus, [len], cache_dir=tmp_path)  # type: ignore[list-item]


def test_gzipped_inputs_give_plain_files(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    import gzip

    zipped = []
    for path in corpus:
        target = path.with_name(path.name + ".gz")
        target.write_bytes(gzip.compress(path.read_bytes()))
        zipped.append(target)
    result = clean_corpus(*zipped, [], cache_dir=tmp_path / "cache")
    assert (result.src.name, result.tgt.name) == ("train.en", "train.es")
    assert result.src.read_text(encoding="utf-8").splitlines() == SOURCES


def dead_pid() -> int:
    """A process ID no process has now."""
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1

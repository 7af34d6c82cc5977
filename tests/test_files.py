"""Atomic writes: modes follow the umask, and a writer cleans only temporaries it can tell are abandoned
(dead processes of its own host, or a day old), never live work of another host sharing the directory."""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from seq2seq.checkpoint import save_checkpoint
from seq2seq.inference.text_files import write_lines
from seq2seq.data.binarize import encoded_corpus
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.files import (
    atomic_output,
    build_directory_atomically,
    is_abandoned,
    temporaries_of,
    temporary_path,
    this_host,
)


@contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def dead_pid() -> int:
    """A PID no process on this host has: Linux never hands out one above PID_MAX_LIMIT (2**22), and
    other systems stay lower still. (Starting a process to get the PID of a dead one would make these
    tests slow.)"""
    return (1 << 22) + 1


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002], ids=oct)
def test_checkpoints_and_outputs_get_the_mode_the_umask_allows(tmp_path: Path, mask: int) -> None:
    with umask(mask):
        save_checkpoint(tmp_path / "last.pt", {"model": {"w": torch.zeros(2)}})
        write_lines(str(tmp_path / "out" / "test.es"), ["hola", "mundo"])
        with atomic_output(tmp_path / "record.json", "w", encoding="utf-8") as handle:
            handle.write("{}")
    for name in ("last.pt", "out/test.es", "record.json"):
        assert mode(tmp_path / name) == 0o666 & ~mask, name
    assert (tmp_path / "out" / "test.es").read_text(encoding="utf-8") == "hola\nmundo\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt", "out", "record.json"]  # no temporaries


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "model.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old" and temporaries_of(target) == []


def test_temporary_names_carry_host_and_process_and_never_repeat(tmp_path: Path) -> None:
    final = tmp_path / "train.en-train.es.abc123"
    first, second = temporary_path(final), temporary_path(final)
    assert first != second and first.parent == tmp_path
    assert first.name.startswith(f".{final.name}.{this_host()}.{os.getpid()}.")
    assert first.name.endswith(".tmp")


def test_only_abandoned_temporaries_are_abandoned(tmp_path: Path) -> None:
    final = tmp_path / "cache.key"
    mine_alive = tmp_path / f".{final.name}.{this_host()}.{os.getpid()}.aaaaaa.tmp"
    mine_dead = tmp_path / f".{final.name}.{this_host()}.{dead_pid()}.bbbbbb.tmp"
    other_host = tmp_path / f".{final.name}.node17.{os.getpid()}.cccccc.tmp"
    other_host_old = tmp_path / f".{final.name}.node17.{dead_pid()}.dddddd.tmp"
    unknown_form = tmp_path / f".{final.name}.12345.tmp"
    for path in (mine_alive, mine_dead, other_host, other_host_old, unknown_form):
        path.mkdir()
        (path / "chunk").write_bytes(b"x")
    two_days_ago = time.time() - 2 * 24 * 3600
    for path in (other_host_old, other_host_old / "chunk"):
        os.utime(path, (two_days_ago, two_days_ago))
    assert temporaries_of(final) == sorted([mine_alive, mine_dead, other_host, other_host_old, unknown_form])
    verdicts = {path.name: is_abandoned(path, final) for path in temporaries_of(final)}
    assert verdicts == {
        mine_alive.name: False,
        mine_dead.name: True,
        other_host.name: False,  # its PID means nothing here: another host's live build
        other_host_old.name: True,
        unknown_form.name: False,  # not a day old yet
    }


def test_a_cache_build_leaves_another_hosts_build_alone(tmp_path: Path) -> None:
    """Two jobs on different hosts share `cache_dir`: neither deletes the other's build in progress."""
    src, tgt = tmp_path / "train.x", tmp_path / "train.y"
    src.write_text("la casa\nel perro\n", encoding="utf-8")
    tgt.write_text("the house\nthe dog\n", encoding="utf-8")
    tokenizer = Tokenizer.train(["la casa el perro the house the dog"] * 20, vocab_size=18, model_type="char")
    cache = tmp_path / "cache"
    options = dict(src_tokenizer=tokenizer, tgt_tokenizer=tokenizer, cache_dir=cache, progress=False)
    encoded_corpus(src, tgt, **options)
    (final,) = cache.iterdir()
    shutil.rmtree(final)  # the next build finds the temporaries below
    other_host = cache / f".{final.name}.node17.{os.getpid()}.cccccc.tmp"
    mine_dead = cache / f".{final.name}.{this_host()}.{dead_pid()}.bbbbbb.tmp"
    for path in (other_host, mine_dead):
        path.mkdir()
        (path / "src.ids.npy").write_bytes(b"partial")
    dataset, _ = encoded_corpus(src, tgt, **options)
    assert len(dataset) == 2
    assert other_host.is_dir() and (other_host / "src.ids.npy").read_bytes() == b"partial"
    assert not mine_dead.exists()


def test_a_directory_build_renames_into_place_and_leaves_no_temporary(tmp_path: Path) -> None:
    final = tmp_path / "cache" / "clean-abc"
    seen: list[Path] = []

    def build(directory: Path) -> None:
        seen.append(directory)
        directory.mkdir()
        (directory / "train.en").write_text("hello\n", encoding="utf-8")

    build_directory_atomically(final, build, what="test corpus")
    assert seen[0] != final and seen[0].parent == final.parent  # built beside, under another name
    assert (final / "train.en").read_text(encoding="utf-8") == "hello\n"
    assert temporaries_of(final) == [] and sorted(final.parent.iterdir()) == [final]


def test_a_failing_directory_build_leaves_no_final_and_no_temporary(tmp_path: Path) -> None:
    final = tmp_path / "clean-abc"

    def build(directory: Path) -> None:
        directory.mkdir()
        (directory / "half").write_bytes(b"x")
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError, match="worker died"):
        build_directory_atomically(final, build, what="test corpus")
    assert not final.exists() and temporaries_of(final) == [] and list(tmp_path.iterdir()) == []


def test_a_directory_build_removes_its_hosts_dead_leftovers_only(tmp_path: Path) -> None:
    final = tmp_path / "clean-abc"
    mine_dead = tmp_path / f".{final.name}.{this_host()}.{dead_pid()}.bbbbbb.tmp"
    other_host = tmp_path / f".{final.name}.node17.{os.getpid()}.cccccc.tmp"
    for path in (mine_dead, other_host):
        path.mkdir()
    build_directory_atomically(final, lambda directory: directory.mkdir(), what="test corpus")
    assert final.is_dir() and other_host.is_dir() and not mine_dead.exists()


def test_a_directory_another_process_finished_first_is_kept(tmp_path: Path) -> None:
    """Two processes build the same key: the loser's rename fails onto a full directory, and that is fine."""
    final = tmp_path / "clean-abc"

    def build(directory: Path) -> None:
        directory.mkdir()
        (directory / "mine").write_bytes(b"x")
        final.mkdir()  # the other process renames its build into place first
        (final / "theirs").write_bytes(b"y")

    build_directory_atomically(final, build, what="test corpus")
    assert sorted(p.name for p in final.iterdir()) == ["theirs"] and temporaries_of(final) == []

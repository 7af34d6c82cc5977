"""Atomic writes shared by every writer: readers see the old file or the whole new one, never a part.

A file is written under a temporary name beside its final one, then renamed. The temporary name holds
the host and the process ID, so jobs on several hosts (SLURM trials, containers whose PIDs repeat)
sharing one cache or data directory never write into each other's temporaries, and a cleaner can
tell whose leftovers it may delete: only those of dead processes on its own host, or any older than a
day. New files get the permissions the umask allows, as with `open()`, not `tempfile`'s 0600.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

ABANDONED_AFTER_SECONDS = 24 * 3600  # another host's temporary is someone's live work until then


def this_host() -> str:
    """The host name as it appears in temporary names (no separators or dots of its own)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname()) or "host"


def temporary_path(final: Path) -> Path:
    """`.<name>.<host>.<pid>.<random>.tmp` beside `final`: unique across processes and hosts."""
    final = Path(final)
    return final.parent / f".{final.name}.{this_host()}.{os.getpid()}.{secrets.token_hex(3)}.tmp"


def temporaries_of(final: Path) -> list[Path]:
    """Every temporary (of any writer, any host) of `final` that exists now."""
    final = Path(final)
    return sorted(final.parent.glob(f".{glob_escape(final.name)}.*.tmp"))


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def is_abandoned(temporary: Path, final: Path, *, now: float | None = None) -> bool:
    """Whether `temporary` (of `final`) may be deleted: its writer was a process of this host that is
    gone, or it has not changed for a day (a writer on another host cannot be asked)."""
    writer = _writer(temporary, final)
    if writer is not None and writer[0] == this_host():
        return not _process_alive(writer[1])
    return (now or time.time()) - _newest_change(temporary) > ABANDONED_AFTER_SECONDS


def _writer(temporary: Path, final: Path) -> tuple[str, int] | None:
    """(host, pid) from a temporary's name; None for a name of another form."""
    middle = temporary.name.removeprefix(f".{Path(final).name}.").removesuffix(".tmp")
    parts = middle.split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


def _newest_change(path: Path) -> float:
    """The latest modification time of `path` and, for a directory, of what it holds."""
    try:
        times = [path.stat().st_mtime]
        if path.is_dir():
            times += [entry.stat().st_mtime for entry in path.rglob("*")]
    except FileNotFoundError:
        return time.time()  # gone or changing under us: not abandoned
    return max(times)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


@contextmanager
def atomic_output(path: Path, mode: str = "wb", **open_options: Any) -> Iterator[IO[Any]]:
    """Open a temporary beside `path` for writing; on success it is flushed, synced and renamed to
    `path`, on any error removed. Permissions follow the umask."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(path)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, mode, **open_options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def build_directory_atomically(final: Path, build: Callable[[Path], object], *, what: str) -> None:
    """Call `build(temporary)` to fill a directory beside `final`, then rename it to `final`, so a reader
    never trusts a half-built cache. Leftovers this host can tell have died (or untouched for a day) are
    removed first; another process's live build is left alone, and one that finished the same `final`
    first wins. `what` names the directory in log lines."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in temporaries_of(final):
        if is_abandoned(stale, final):
            log.info("%s: removing %s, left by a build that did not finish", what, stale)
            shutil.rmtree(stale, ignore_errors=True)
    temporary = temporary_path(final)
    try:
        build(temporary)
        os.replace(temporary, final)
    except OSError:
        if not final.is_dir():  # not just another process finishing the same build first
            raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)

"""A run directory holds one run: a fresh start never mixes with another run's files, and a resume
continues the run whose files are there.

Checkpoint rotation keeps the highest-numbered files and averaging takes the newest ones, so an old
checkpoint_9000.pt beside a new run would delete the new run's checkpoints as they are written and be
averaged in its place; last.pt, best.pt, averaged.pt and summary.json of another run would be read
back as this run's. Such directories are refused before any training work, and nothing in them is
moved or deleted. Nor may two processes train in one directory at once: the first holds a lock on
`.run.lock` there (`hold_run_directory`; the operating system drops it when the process ends, however
it ends), and a second stops with one line naming the holder.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, Any

from seq2seq.checkpoint import load_checkpoint
from seq2seq.errors import UserError
from seq2seq.files import this_host
from seq2seq.train.averaging import checkpoint_step, numbered_checkpoints
from seq2seq.train.fingerprint import check_same_run
from seq2seq.train.snapshots import PATTERN as SNAPSHOT

RUN_FILES = ("last.pt", "best.pt", "averaged.pt", "summary.json")
LOCK_FILE = ".run.lock"
_HELD: dict[Path, IO[str]] = {}  # run directories this process holds, and their open lock files
SHOWN_FILES = 4
NEW_RUN = "give this run a new run_name (or hydra.run.dir), or move those files away"


def run_files(run_dir: Path) -> list[Path]:
    """The files a training run leaves in its directory (its checkpoints, snapshots and summary)."""
    if not run_dir.is_dir():
        return []
    named = [run_dir / name for name in RUN_FILES if (run_dir / name).is_file()]
    snapshots = sorted(p for p in run_dir.glob("snapshot_*.pt") if SNAPSHOT.fullmatch(p.name))
    return named + numbered_checkpoints(run_dir) + snapshots


def _names(paths: list[Path]) -> str:
    shown = ", ".join(p.name for p in paths[:SHOWN_FILES])
    return shown + (f" and {len(paths) - SHOWN_FILES} more" if len(paths) > SHOWN_FILES else "")


def check_run_directory(run_dir: Path, checkpoint: Path | None, resume: str) -> None:
    """Refuse to start a run among another run's files: from scratch (`checkpoint` None) in a directory
    that holds any, or from a checkpoint other than the directory's own last.pt in one that holds any."""
    found = run_files(run_dir)
    if not found:
        return
    last = run_dir / "last.pt"
    if checkpoint is not None and checkpoint.resolve() == last.resolve():
        return
    if checkpoint is None:
        start = f"trainer.resume={resume} starts a new run" + (" (no last.pt)" if resume == "auto" else "")
    else:
        start = f"trainer.resume={checkpoint} starts a run from that checkpoint"
    resume_hint = "continue that run with trainer.resume=auto, or " if last.is_file() else ""
    raise UserError(
        f"{run_dir} holds another run's files ({_names(found)}) and {start}: {resume_hint}{NEW_RUN}"
    )


def hold_run_directory(run_dir: Path) -> None:
    """Lock `run_dir` for this process (once per process: a second call for the same directory is a
    no-op), or stop with one line if another process holds it."""
    run_dir = Path(run_dir).resolve()
    if run_dir in _HELD:
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    handle = open(run_dir / LOCK_FILE, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise UserError(
            f"{run_dir} is in use: {holder} is training there; wait for it to finish, or give this run a "
            "new run_name (or hydra.run.dir)"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()} on {this_host()}\n")
    handle.flush()
    _HELD[run_dir] = handle


def release_run_directory(run_dir: Path) -> None:
    """Give up this process's lock on `run_dir` (nothing if it holds none)."""
    handle = _HELD.pop(Path(run_dir).resolve(), None)
    if handle is not None:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def check_resume(checkpoint: Path, run_dir: Path, fingerprint: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's contents, once they are known to be this run's: trained with its model and data
    settings, and no numbered checkpoint in the run directory newer than it (those belong to another
    run: rotation and averaging would take them for this run's)."""
    payload = load_checkpoint(checkpoint)
    check_same_run(checkpoint, payload.get("fingerprint"), fingerprint)
    step = int(payload.get("step", 0))
    newer = [path for path in numbered_checkpoints(run_dir) if checkpoint_step(path) > step]
    if newer:
        raise UserError(
            f"{run_dir} holds {_names(newer)}, numbered after update {step} of {checkpoint}, which this run "
            f"resumes from: files of another run; {NEW_RUN}"
        )
    return payload

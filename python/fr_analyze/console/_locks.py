"""Advisory locks between the processes that share one --data folder: the server, and
`fr-analyze serve --reanalyze` or a retention run started beside it.

    locks/maintenance.lock   held by one maintenance run (--reanalyze, --keep-days, --max-bytes)
                             from start to end: a second one refuses to start
    locks/<id>.lock          held while analysis <id> is analysed again (the page's button, the
                             API, --reanalyze): a second re-run of it answers busy instead of
                             racing the first for its row and its kept outputs, and the server's
                             start-up sweep leaves that re-run's work folder alone

The locks are flock(2) locks on files that stay: the kernel drops one when its holder exits or
is killed, so a crash never leaves a stale lock behind. Each file names its current holder
(what and pid) for the message of whoever finds it taken.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
from typing import Iterator


class Busy(Exception):
    """The lock is held by another process (or another task of this one)."""

    def __init__(self, path: pathlib.Path, holder: str):
        self.path = path
        self.holder = holder or "another process"
        super().__init__(f"{path} is held by {self.holder}")


def lock_path(data: pathlib.Path, name: str) -> pathlib.Path:
    return data / "locks" / f"{name}.lock"


@contextlib.contextmanager
def hold(path: pathlib.Path, holder: str) -> Iterator[None]:
    """Holds the lock at `path` for the block, or raises Busy at once (never waits)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(path, os.pread(fd, 256, 0).decode(errors="replace").strip()) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder} (pid {os.getpid()})\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def is_held(path: pathlib.Path) -> bool:
    """Whether another process (or task) holds the lock at `path` now."""
    if not path.exists():
        return False
    try:
        with hold(path, "a check"):
            return False
    except Busy:
        return True

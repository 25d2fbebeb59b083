"""Turning what a user passes to load() (a directory, a file, a list of files, a glob) into what
the C++ loader reads: a root, and for lists the files themselves (no links are made)."""

from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass, field
from typing import Iterable, List, Sequence, Union

from fr_analyze.errors import DumpNotFoundError, OutputIsInputError

PathLike = Union[str, "os.PathLike[str]"]
PathsArg = Union[PathLike, Sequence[PathLike]]

_GLOB_CHARS = set("*?[")


@dataclass
class LoadRoot:
    """What the C++ loader reads: a directory or file `root`, or, for a list of files, their
    common directory as `root` with the files relative to it in `files`."""

    root: str
    source: str
    files: List[str] = field(default_factory=list)


def _is_glob(text: str) -> bool:
    return any(c in _GLOB_CHARS for c in text) and not os.path.exists(text)


def _list_files(files: Iterable[str], source: str) -> LoadRoot:
    files = sorted({os.path.abspath(f) for f in files})
    if not files:
        raise DumpNotFoundError(f"{source}: matched no file")
    for f in files:
        if not os.path.exists(f):
            raise DumpNotFoundError(f"{f}: no such file or directory")
    common = os.path.commonpath(files) if len(files) > 1 else os.path.dirname(files[0])
    if common in files:  # one file given twice
        common = os.path.dirname(common)
    return LoadRoot(root=common, source=source,
                    files=[os.path.relpath(f, common) for f in files])


def resolve(paths: PathsArg) -> LoadRoot:
    """Resolves a directory, a file, a glob or a list of files (globs allowed in the list)."""
    if isinstance(paths, (str, os.PathLike)):
        text = os.fspath(paths)
        if not _is_glob(text):
            return LoadRoot(root=text, source=text)
        matches = sorted(glob.glob(text, recursive=True))
        if len(matches) == 1 and os.path.isdir(matches[0]):
            return LoadRoot(root=matches[0], source=text)
        return _list_files([m for m in matches if not os.path.isdir(m)] or matches, text)
    items = [os.fspath(p) for p in paths]
    files: list = []
    for item in items:
        files.extend(sorted(glob.glob(item, recursive=True)) if _is_glob(item) else [item])
    directories = [f for f in files if os.path.isdir(f)]
    if directories:
        raise DumpNotFoundError(
            f"{directories[0]}: a list of paths must name files; pass a directory on its own"
        )
    return _list_files(files, ", ".join(items) if len(items) <= 3 else f"{len(items)} files")


def refuse_overwriting_input(path: str, inputs: Iterable[str]) -> None:
    """Raises OutputIsInputError when `path` is (or links to) one of `inputs`: writing there would
    destroy the evidence being analysed (what the CLI refuses for -o too)."""
    try:
        out = os.stat(path)
        head = b""
        if stat.S_ISREG(out.st_mode):  # never open a pipe or device to look at it
            with open(path, "rb") as f:
                head = f.read(4096)
    except OSError:
        return  # a new file (or one that cannot be read: opening it to write will say why)
    from fr_analyze import _core

    if _core.is_own_report(head):
        return  # an earlier run's report: replacing it is what the user asked for
    for item in inputs:
        try:
            other = os.stat(item)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (out.st_dev, out.st_ino):
            raise OutputIsInputError(
                f"refusing to write to {path}: it is the input file {item}")

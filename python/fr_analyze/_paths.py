"""Turning what a user passes to load() (a directory, a file, a list of files, a glob) into the
one root the C++ loader reads."""

from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Union

from fr_analyze.errors import DumpNotFoundError

PathLike = Union[str, "os.PathLike[str]"]
PathsArg = Union[PathLike, Sequence[PathLike]]

_GLOB_CHARS = set("*?[")


@dataclass
class LoadRoot:
    """A root for the C++ loader. For a list of files it is a temporary directory of symlinks
    that mirrors their layout below `common`; paths under `root` mean the same paths under
    `common` (see `display`)."""

    root: str
    source: str
    common: Optional[str] = None
    _temp: Optional[tempfile.TemporaryDirectory] = None

    def display(self, text: str) -> str:
        """`text` with the temporary root replaced by the files' real common directory."""
        if self.common is None:
            return text
        return text.replace(self.root.rstrip(os.sep) + os.sep, self.common.rstrip(os.sep) + os.sep)

    def close(self) -> None:
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None


def _is_glob(text: str) -> bool:
    return any(c in _GLOB_CHARS for c in text) and not os.path.exists(text)


def _link_files(files: Iterable[str], source: str) -> LoadRoot:
    files = sorted({os.path.abspath(f) for f in files})
    if not files:
        raise DumpNotFoundError(f"{source}: matched no file")
    for f in files:
        if not os.path.exists(f):
            raise DumpNotFoundError(f"{f}: no such file or directory")
    common = os.path.commonpath(files) if len(files) > 1 else os.path.dirname(files[0])
    if common in files:  # one file given twice
        common = os.path.dirname(common)
    temp = tempfile.TemporaryDirectory(prefix="fr_analyze_")
    for f in files:
        link = os.path.join(temp.name, os.path.relpath(f, common))
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(f, link)
    return LoadRoot(root=temp.name, source=source, common=common, _temp=temp)


def resolve(paths: PathsArg) -> LoadRoot:
    """Resolves a directory, a file, a glob or a list of files (globs allowed in the list)."""
    if isinstance(paths, (str, os.PathLike)):
        text = os.fspath(paths)
        if not _is_glob(text):
            return LoadRoot(root=text, source=text)
        matches = sorted(glob.glob(text, recursive=True))
        if len(matches) == 1 and os.path.isdir(matches[0]):
            return LoadRoot(root=matches[0], source=text)
        return _link_files([m for m in matches if not os.path.isdir(m)] or matches, text)
    items = [os.fspath(p) for p in paths]
    files: list = []
    for item in items:
        files.extend(sorted(glob.glob(item, recursive=True)) if _is_glob(item) else [item])
    directories = [f for f in files if os.path.isdir(f)]
    if directories:
        raise DumpNotFoundError(
            f"{directories[0]}: a list of paths must name files; pass a directory on its own"
        )
    return _link_files(files, ", ".join(items) if len(items) <= 3 else f"{len(items)} files")

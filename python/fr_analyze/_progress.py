"""The progress callback handed to the C++ loader: a tqdm bar, a user's function, or nothing."""

from __future__ import annotations

import sys
from typing import Callable, Optional, Union

from fr_analyze.errors import require

ProgressArg = Union[None, bool, Callable[[int, int], None]]


class _TqdmProgress:
    """Feeds (files done, files total) from the loader into a tqdm bar on stderr."""

    def __init__(self, tqdm_module) -> None:
        self._tqdm = tqdm_module
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = self._tqdm.tqdm(total=total, unit="file", desc="fr-analyze: loading",
                                        file=sys.stderr, leave=False)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _noop(done: int, total: int) -> None:
    pass


def make_progress(progress: ProgressArg) -> tuple:
    """Returns (callback, close). The callback is never None, so Ctrl-C can always cancel.

    None: a tqdm bar when tqdm is installed and stderr is a terminal, else nothing shown.
    True: a tqdm bar (MissingDependencyError when tqdm is not installed). False: nothing shown.
    A callable: called with (files done, files total) after each file.
    """
    if callable(progress):
        return progress, lambda: None
    if progress is True:
        bar = _TqdmProgress(require("tqdm", "progress=True", "python3-tqdm"))
        return bar, bar.close
    if progress is None and sys.stderr is not None and sys.stderr.isatty():
        try:
            import tqdm
        except ImportError:
            return _noop, lambda: None
        bar = _TqdmProgress(tqdm)
        return bar, bar.close
    return _noop, lambda: None

"""Checking what callers pass to the public functions, before anything reaches the C++ core.

Every check raises TypeError (wrong kind of value) or ValueError (right kind, impossible value)
whose message names the argument, in place of pybind11's "incompatible function arguments" or,
worse, an answer made up from nonsense (analyze_log(None) read "None" as a log). Limits are the
command line's, so that the same numbers mean the same in both.

Paths are the file system's bytes: a str holding surrogate escapes (how Python spells a file name
that is not UTF-8) is encoded back to those bytes with os.fsencode, never refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, List, Union

# The command line's limits (tools/fr_analyze_main.cc): -j, --dump-time, and ranks, which are
# 32-bit in PyTorch and in the report (fr-analyze entries --ranks).
MAX_JOBS = 1024
MAX_RANK = 2**31 - 1
MAX_NS = 2**63 - 1


def _kind(value: Any) -> str:
    return type(value).__name__


def text(value: Any, name: str) -> str:
    """`value`, a str that can be written as UTF-8 (no lone surrogate)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{name} holds {value[error.start]!r} at index {error.start}, a lone surrogate that "
            f"no UTF-8 text can hold") from None
    return value


def optional_text(value: Any, name: str) -> str:
    """"" for None, else text(value)."""
    return "" if value is None else text(value, name)


def optional_file_name(value: Any, name: str) -> bytes:
    """b"" for None, else file_name(value)."""
    return b"" if value is None else file_name(value, name)


def file_name(value: Any, name: str) -> bytes:
    """A path or part of one (str, bytes or os.PathLike) as the file system's bytes."""
    if isinstance(value, (str, bytes)) or isinstance(value, os.PathLike):
        try:
            return os.fsencode(value)
        except UnicodeEncodeError as error:
            raise ValueError(
                f"{name} {value!r} cannot be a file name: {error.reason} at index "
                f"{error.start}") from None
        except TypeError:  # a PathLike whose __fspath__ returns neither str nor bytes
            pass
    raise TypeError(f"{name} must be a path (str, bytes or os.PathLike), not {_kind(value)}")


def paths(value: Any, name: str) -> Union[str, List[str]]:
    """A path, or a non-empty list of paths, as str (file names that are not UTF-8 as surrogate
    escapes, as os.fsdecode gives them); what _paths.resolve takes."""
    if isinstance(value, (str, bytes, os.PathLike)):
        return os.fsdecode(file_name(value, name))
    # Any iterable of paths (a list, a set, Path.glob()'s generator), but not a mapping: its keys
    # are not what was meant.
    if isinstance(value, (bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a path (str, bytes or os.PathLike) or a list of paths, "
                        f"not {_kind(value)}")
    items = list(value)
    if not items:
        raise ValueError(f"{name} is an empty list: name a directory, a file or a glob")
    return [os.fsdecode(file_name(item, f"{name}[{i}]")) for i, item in enumerate(items)]


def integer(value: Any, name: str, low: int, high: int) -> int:
    """An int (not a bool) from `low` to `high`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {_kind(value)}")
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is out of range: it needs a number from {low} to {high}")
    return value


def jobs(value: Any) -> int:
    """Threads for reading and decoding; 0 (or None) for one per core."""
    return 0 if value is None else integer(value, "jobs", 0, MAX_JOBS)


def rank(value: Any, name: str) -> int:
    """A global rank, as fr-analyze entries --ranks takes it."""
    return integer(value, name, 0, MAX_RANK)


def dump_time_ns(value: Any) -> int:
    """When the dumps were taken (ns since the epoch), or -1 for None: the files' times decide."""
    return -1 if value is None else integer(value, "dump_time_ns", 0, MAX_NS)


def progress(value: Any) -> Any:
    if value is None or isinstance(value, bool) or callable(value):
        return value
    raise TypeError(f"progress must be None, a bool or a callable(done, total), not {_kind(value)}")


def client(value: Any) -> Any:
    """A dask.distributed.Client, or anything with its map() and gather()."""
    if value is None or (callable(getattr(value, "map", None)) and
                         callable(getattr(value, "gather", None))):
        return value
    raise TypeError(f"client must be a dask.distributed.Client, not {_kind(value)}")


def names(value: Any, name: str) -> List[str]:
    """A list of names (one str is a list of one)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [text(value, name)]
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of str, not {_kind(value)}")
    return [text(item, f"{name}[{i}]") for i, item in enumerate(value)]


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {_kind(value)}")
    return value


def log_text(value: Any, name: str) -> Union[str, bytes]:
    """A log's text (str) or its bytes as read from a file (bytes, bytearray, memoryview: decoded
    like a log file, UTF-16 included). A str's surrogate escapes (text read with
    errors="surrogateescape") become the bytes they stand for; other lone surrogates are refused."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or bytes, not {_kind(value)}")
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{name} holds {value[error.start]!r} at index {error.start}, a lone surrogate that "
            f"no UTF-8 text can hold") from None


def dumps_by_rank(value: Any, name: str) -> dict:
    """{rank: bytes} with every rank in range and every dump bytes-like."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of rank to bytes, not {_kind(value)}")
    checked = {}
    for key, data in value.items():
        rank(key, f"{name}: rank")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{name}[{key}] must be bytes, not {_kind(data)}")
        checked[key] = bytes(data)
    return checked

"""Trace: the dumps of one job as loaded by the C++ core, with Python-friendly views."""

from __future__ import annotations

import os
from typing import Callable, Iterator, Mapping, Optional

from fr_analyze import _core


def _entry_dict(dump: "_core.RankDump", entry: "_core.Entry") -> dict:
    """One entry with its interned strings, shapes and stack resolved."""
    group = dump.groups[entry.group]

    def unknown_to_none(value: int) -> Optional[int]:
        return None if value == -1 else value

    return {
        "rank": dump.rank,
        "record_id": unknown_to_none(entry.record_id),
        "pg_id": unknown_to_none(entry.pg_id),
        "process_group": (dump.string(group.name_id), dump.string(group.desc_id)),
        "collective_seq_id": unknown_to_none(entry.collective_seq_id),
        "p2p_seq_id": unknown_to_none(entry.p2p_seq_id),
        "op_id": unknown_to_none(entry.op_id),
        "profiling_name": dump.string(entry.profiling_name_id),
        "backend": dump.string(entry.backend_id),
        "op": dump.string(entry.op_name_id),
        "op_kind": entry.op_kind,
        "peer_rank": unknown_to_none(entry.peer_rank),
        "time_created_ns": unknown_to_none(entry.time_created_ns),
        "duration_ms": None if entry.duration_ms != entry.duration_ms else entry.duration_ms,
        "input_sizes": dump.shapes(entry.input_sizes_id),
        "input_dtypes": dump.dtypes(entry.input_dtypes_id),
        "output_sizes": dump.shapes(entry.output_sizes_id),
        "output_dtypes": dump.dtypes(entry.output_dtypes_id),
        "state": entry.state,
        "time_discovered_started_ns": unknown_to_none(entry.time_discovered_started_ns),
        "time_discovered_completed_ns": unknown_to_none(entry.time_discovered_completed_ns),
        "retired": entry.retired,
        "timeout_ms": unknown_to_none(entry.timeout_ms),
        "is_p2p": entry.is_p2p,
        "thread_name": dump.string(entry.thread_name_id),
        "thread_id": dump.string(entry.thread_id_id),
        "frames": dump.stack(entry.stack_id),
    }


def _entry_dicts(dump: "_core.RankDump") -> list:
    return [_entry_dict(dump, entry) for entry in dump.entries]


def _group_dicts(dump: "_core.RankDump") -> list:
    result = []
    for group in dump.groups:
        status = group.status
        result.append(
            {
                "name": dump.string(group.name_id),
                "desc": dump.string(group.desc_id),
                "ranks": list(group.ranks) if group.ranks_known else None,
                "pg_id": None if group.pg_id == -1 else group.pg_id,
                "last_enqueued_collective": status.last_enqueued_collective if status else None,
                "last_started_collective": status.last_started_collective if status else None,
                "last_completed_collective": status.last_completed_collective if status else None,
            }
        )
    return result


# Conveniences on the compiled class, defined here so that the binding file only binds.
_core.RankDump.entry_dicts = _entry_dicts
_core.RankDump.group_dicts = _group_dicts
_core.RankDump.__repr__ = lambda d: (
    f"<RankDump rank={d.rank} version={d.version!r} entries={len(d.entries)} path={d.path!r}>"
)


class Trace:
    """The dumps of one job: what loaded, what was missing, rejected or skipped, and why."""

    def __init__(self, loaded: "_core.LoadedTrace", source: str):
        self._loaded = loaded
        self.source = source

    @property
    def ranks(self) -> list:
        """Per-rank dumps (fr_analyze._core.RankDump), ascending rank."""
        return self._loaded.ranks

    def rank(self, rank: int) -> "_core.RankDump":
        for dump in self._loaded.ranks:
            if dump.rank == rank:
                return dump
        raise KeyError(f"rank {rank} was not loaded")

    @property
    def missing_ranks(self) -> list:
        return list(self._loaded.missing_ranks)

    @property
    def rejected(self) -> list:
        """Files that could not be read: objects with path, rank and error."""
        return list(self._loaded.rejected)

    @property
    def skipped(self) -> list:
        return list(self._loaded.skipped)

    @property
    def conflicts(self) -> list:
        return list(self._loaded.conflicts)

    @property
    def versions(self) -> list:
        return list(self._loaded.versions)

    def __iter__(self) -> Iterator:
        return iter(self.ranks)

    def __len__(self) -> int:
        return len(self._loaded.ranks)

    def __str__(self) -> str:
        return self._loaded.summary_text(self.source)

    def __repr__(self) -> str:
        return f"<Trace {len(self)} ranks from {self.source!r}>"

    def summary(self) -> dict:
        """What was loaded, as a dict (the same content as `fr-analyze DIR --format json`)."""
        import json

        return json.loads(self._loaded.summary_json(self.source))


def load(
    path: "str | os.PathLike",
    *,
    prefix: Optional[str] = None,
    rank_pattern: Optional[str] = None,
    jobs: Optional[int] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Trace:
    """Loads every flight-recorder dump under `path` (a directory or one file).

    Files that cannot be read are listed in `Trace.rejected`, not raised; an error is raised only
    when nothing can be attempted (the path does not exist, a bad rank pattern).
    """
    source = os.fspath(path)
    loaded = _core.load(source, prefix or "", rank_pattern or "", jobs or 0, progress)
    return Trace(loaded, source)


def loads(dumps: Mapping[int, bytes], *, jobs: Optional[int] = None) -> Trace:
    """Loads dumps held in memory, keyed by global rank (for dumps fetched over HTTP)."""
    return Trace(_core.load_bytes(dict(dumps), jobs or 0), "<memory>")

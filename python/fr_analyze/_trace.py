"""Trace and Report: the dumps of one job as loaded by the C++ core, and what the analysis found
in them, with Python-friendly views. One module because each gives the other: Trace.analyze()
makes a Report, Report.trace is the Trace it came from.

    trace = fr_analyze.load("/checkpoints/job42/fr")
    report = trace.analyze()
    report.verdict.failure_class        # "missing_participant"
    report.verdict.culprit_ranks        # [37]
    print(report)                       # the text report `fr-analyze DIR` prints
    report.to_json()                    # `fr-analyze analyze DIR --format json`, byte for byte
    report.trace is trace               # True
"""

from __future__ import annotations

import copy
import functools
import html
import json
import os
from typing import TYPE_CHECKING, Any, Iterator, List, Mapping, Optional, Sequence

from fr_analyze import _args, _core, _frames
from fr_analyze._paths import PathsArg, refuse_overwriting_input, resolve
from fr_analyze._progress import ProgressArg, make_progress
from fr_analyze._report import Message, message_dict
from fr_analyze.errors import Error, NoDumpsError

if TYPE_CHECKING:
    import pandas


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


class RejectedFile:
    """A file that looked like a dump but could not be read."""

    __slots__ = ("path", "rank", "error")

    def __init__(self, path: str, rank: Optional[int], error: str):
        self.path = path
        self.rank = rank
        self.error = error

    def __repr__(self) -> str:
        return f"RejectedFile(path={self.path!r}, rank={self.rank}, error={self.error!r})"


class Trace:
    """The dumps of one job: what loaded, what was missing, rejected or skipped, and why.

    Made by `fr_analyze.load()` or `fr_analyze.loads()`; `analyze()` finds the culprit.
    """

    def __init__(self, loaded: "_core.LoadedTrace", source: str):
        self._loaded = loaded
        self.source = source

    # What was loaded.

    @property
    def ranks(self) -> List["_core.RankDump"]:
        """Per-rank dumps (fr_analyze._core.RankDump), ascending rank."""
        return self._loaded.ranks

    def rank(self, rank: int) -> "_core.RankDump":
        """The dump of global rank `rank`; KeyError when it was not loaded."""
        _args.integer(rank, "rank", -2**63, 2**63 - 1)
        for dump in self._loaded.ranks:
            if dump.rank == rank:
                return dump
        raise KeyError(f"rank {rank} was not loaded")

    @property
    def rank_ids(self) -> List[int]:
        """Global ranks whose dump was read, ascending."""
        return [d.rank for d in self._loaded.ranks]

    @property
    def missing_ranks(self) -> List[int]:
        """Ranks the job had (group members, or below the highest rank) without a dump."""
        return list(self._loaded.missing_ranks)

    @property
    def rejected(self) -> List[RejectedFile]:
        """Files that could not be read: path, rank (None when unknown) and error."""
        return [
            RejectedFile(r.path, None if r.rank == -1 else r.rank, r.error)
            for r in self._loaded.rejected
        ]

    @property
    def skipped(self) -> list:
        """Files that are not dumps (pipes, logs, cores): objects with path and reason."""
        return list(self._loaded.skipped)

    @property
    def conflicts(self) -> list:
        """Ranks claimed by several files (none of them loaded): objects with rank and paths."""
        return list(self._loaded.conflicts)

    @property
    def versions(self) -> List[str]:
        """Distinct dump versions, ascending."""
        return list(self._loaded.versions)

    @property
    def process_groups(self) -> List[dict]:
        """Every process group named by some dump: name, desc, ranks and which dumps hold it."""
        return self.summary()["process_groups"]

    def __iter__(self) -> Iterator["_core.RankDump"]:
        return iter(self.ranks)

    def __len__(self) -> int:
        return len(self._loaded.ranks)

    def __str__(self) -> str:
        return self._loaded.summary_text(self._core_source())

    def __repr__(self) -> str:
        return f"<Trace {len(self)} ranks from {self.source!r}>"

    def summary(self) -> dict:
        """What was loaded, as a dict (the same content as `fr-analyze load DIR --format json`)."""
        return json.loads(self._loaded.summary_json(self._core_source()))

    def _core_source(self) -> bytes:
        # What the core is told the source is: a path's bytes (its surrogate escapes undone).
        return os.fsencode(self.source)

    # Analysis and views.

    def analyze(self, *, pg_filter: Optional[Sequence[str]] = None,
                dump_time_ns: Optional[int] = None) -> "Report":
        """Finds the rank(s) that broke the job: the same report as `fr-analyze analyze`.

        pg_filter: report only these process groups (names or descs); matching still uses all.
        dump_time_ns: when the dumps were taken; default: the files' modification times.
        The job's logs found beside the dumps (recognized by content) are read too: the report
        then has verdict.root_cause and timeline, and Report.events_df() lists their events.
        Live stacks beside them (PyTorch's debug-server `stacks_<time>.txt` snapshots, or what
        live(save=...) fetched) say where each rank's main thread is (Report.live_stacks).
        Raises NoDumpsError when no dump, log or stacks snapshot could be read (the CLI's exit
        status 2).
        """
    
        core, failed, events = _core.analyze_with_logs(self._loaded, self._core_source(),
                                                       _args.names(pg_filter, "pg_filter"),
                                                       _args.dump_time_ns(dump_time_ns))
        report = Report(core, failed, trace=self, events=events)
        # Dumps that could not be read are never outweighed by logs that show no failure.
        if not self._loaded.ranks and (
                (bool(self.rejected) and not report.is_failure) or
                not (report._fields.get("log_files") or report._fields.get("live_stacks"))):
            reasons = "".join(f"\n  {r.error}" for r in self.rejected)
            raise NoDumpsError(
                f"no readable flight-recorder dump or log under {self.source}{reasons}")
        return report

    def write_timeline(self, path: str, *, format: str = "perfetto") -> int:
        """Writes the job's timeline: one track per rank under its host, a slice per recorded op
        on the corrected clock, log events as instants, flows from each victim to the rank it
        waits for. format: "perfetto" (Perfetto's protobuf trace, for ui.perfetto.dev) or
        "chrome-json" (chrome://tracing). Returns the bytes written."""
        if not isinstance(format, str) or format not in ("perfetto", "chrome-json"):
            raise ValueError(f"unknown timeline format {format!r} (perfetto, chrome-json)")
        path = _args.file_name(path, "path")
        refuse_overwriting_input(path, self._loaded.evidence_paths)
        data = _core.timeline(self._loaded, self._core_source(), format)
        with open(path, "wb") as f:
            f.write(data)
        return len(data)

    def entries_df(self) -> "pandas.DataFrame":
        """One row per rank x entry; columns documented in fr_analyze._frames.entries_df."""
        return _frames.entries_df(self._loaded)

    def _repr_html_(self) -> str:
        # What `fr-analyze load` prints, as preformatted text: the core writes it, once.
        return f"<div class='fr-trace'><pre>{html.escape(str(self))}</pre></div>"


class Report:
    """What `fr-analyze analyze` finds, as an object (schema: proto/fr/report.proto).

    Top-level fields are attributes: verdict, inputs, process_groups, findings, stragglers, stats,
    ranks, timeline, log_files, schema_version; root_cause is verdict.root_cause (from the logs).
    pandas views: ranks_df(), findings_df(), collectives_df(), events_df().
    """

    def __init__(self, core: "_core.Report", failed: bool, trace: Optional[Trace] = None,
                 events: Optional[dict] = None):
        self._core = core
        # Decided by the analysis on its typed verdict, not read back from the report's words.
        self._failed = failed
        self._trace = trace
        self._events = events or {}

    # The typed message and its dicts are made on first use: parsing a 512-rank report in
    # Python takes about 0.1 s, which the console's worker (it only writes the JSON and the
    # protobuf bytes, both from the core) and a CLI-like caller would pay for nothing.
    @functools.cached_property
    def _message(self) -> Any:
        # From its serialized bytes; the schema (proto/fr/report.proto) says which fields may
        # be absent. Imported here: `import fr_analyze` stays light.
        from fr_analyze import _report_pb2

        return _report_pb2.Report.FromString(self._core.proto_bytes())

    @functools.cached_property
    def _fields(self) -> dict:
        return message_dict(self._message)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(Message(self._fields, self._message.DESCRIPTOR), name)

    @property
    def message(self) -> Any:
        """The report as the protobuf message fr.report.Report (proto/fr/report.proto): typed
        fields, HasField() for those that may be absent, SerializeToString() for the bytes of
        `--format proto`. A copy: changing it changes nothing here."""
        from fr_analyze import _report_pb2

        return _report_pb2.Report.FromString(self._core.proto_bytes())

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._fields))

    @property
    def trace(self) -> Trace:
        """The loaded dumps this report was made from."""
        if self._trace is None:
            raise Error("this report has no trace attached")
        return self._trace

    @property
    def root_cause(self) -> Optional[Message]:
        """Why the job died, from its logs: kind, ranks, hosts, time (UTC), evidence, detail.
        None when no log was read."""
        cause = self._fields.get("verdict", {}).get("root_cause")
        descriptor = self._message.DESCRIPTOR.fields_by_name["verdict"].message_type
        return None if cause is None else Message(
            cause, descriptor.fields_by_name["root_cause"].message_type)

    @property
    def is_failure(self) -> bool:
        """True when the verdict is a failure (the CLI then exits with status 1)."""
        return self._failed

    @property
    def exit_status(self) -> int:
        """The exit status `fr-analyze analyze` gives for this report: 1 failure, 0 none."""
        return 1 if self.is_failure else 0

    def to_dict(self) -> dict:
        """The report as plain dicts and lists (int64 fields as ints)."""
        return copy.deepcopy(self._fields)

    def to_json(self) -> str:
        """Protobuf's JSON mapping with snake_case names: `fr-analyze analyze --format json`
        prints exactly this, plus a newline."""
        return self._core.json()

    def to_proto_bytes(self) -> bytes:
        """The binary fr.report.Report message (`--format proto`)."""
        return self._core.proto_bytes()

    def __str__(self) -> str:
        return self._core.text()

    def __repr__(self) -> str:
        verdict = self._fields["verdict"]
        return (f"<Report {verdict['failure_class']} culprits={verdict['culprit_ranks']} "
                f"confidence={verdict['confidence']}>")

    # pandas views (fr_analyze._frames documents their columns).

    def ranks_df(self) -> "pandas.DataFrame":
        """One row per rank: role, last op, host and its state in each kind of group."""
        return _frames.ranks_df(self._fields)

    def rank_states_df(self) -> "pandas.DataFrame":
        """One row per rank x process group: where the rank stands in it (state, op, seq)."""
        return _frames.rank_states_df(self._fields)

    def findings_df(self) -> "pandas.DataFrame":
        """One row per finding, earliest cause first."""
        return _frames.findings_df(self._fields)

    def events_df(self) -> "pandas.DataFrame":
        """One row per event parsed from the logs, on the corrected clock: time (UTC), raw time
        as printed, rank, host, kind, file, line, text; ordered by time."""
        return _frames.events_df(self._events)

    def collectives_df(self) -> "pandas.DataFrame":
        """One row per process group x collective seq: which ranks issued, started, completed."""
        return _frames.collectives_df(self.trace._loaded, self._fields)

    def to_html(self, *, fragment: bool = False) -> str:
        """The self-contained HTML report, what `fr-analyze report DIR -o report.html` writes:
        verdict and root cause first, the wait-for graph, a timeline of the window around the
        failure, the groups with problems, the findings with their stacks on click. No scripts,
        nothing fetched. fragment=True gives one <div> to embed (what a notebook shows).
        A report of a pasted log (no trace) shows its verdict and log evidence alone."""
        loaded = None if self._trace is None else self._trace._loaded
        return _core.html_report(loaded, self._core, _args.flag(fragment, "fragment"))

    def write_html(self, path: str) -> int:
        """Writes to_html() to `path`; returns the bytes written."""
        path = _args.file_name(path, "path")
        inputs = [f.get("path", "") for f in self._fields.get("log_files", [])]
        if self._trace is not None:
            inputs.extend(self._trace._loaded.evidence_paths)
        refuse_overwriting_input(path, inputs)
        data = self.to_html().encode()
        with open(path, "wb") as f:
            f.write(data)
        return len(data)

    def _repr_html_(self) -> str:
        # A notebook shows the HTML report's own fragment: one renderer for pages and cells.
        return self.to_html(fragment=True)


def load(
    path_or_paths: PathsArg,
    *,
    prefix: Optional[str] = None,
    rank_pattern: Optional[str] = None,
    jobs: Optional[int] = None,
    progress: ProgressArg = None,
    client: Any = None,
) -> Trace:
    """Loads every flight-recorder dump of a job.

    path_or_paths: a directory (searched recursively), one file, a glob ("dumps/*/nccl_trace_*"),
      or a list of files and globs.
    prefix: dump files are named PREFIX<rank> (TORCH_NCCL_DEBUG_INFO_TEMP_FILE works as is).
    rank_pattern: a regex with one group capturing the rank, matched against the relative path.
    jobs: threads for reading and decoding (default: one per core).
    progress: None shows a tqdm bar when tqdm is installed and stderr is a terminal; True always
      (needs tqdm); False never; a callable gets (files done, files total).

    client: a dask.distributed Client: the files are read, decoded and summarized on its
      workers (each must have fr_analyze and see the files at the same paths) and only the
      summaries come back; the trace, and so the report, is the one a local load gives.
      `jobs` and `progress` are then unused (Dask's dashboard shows the progress).
      Trust: Dask sends results from the workers to the client as pickles, so a scheduler or
      worker can run code on this machine; use only a cluster you control.

    Files that cannot be read are listed in `Trace.rejected`, not raised. Raises
    DumpNotFoundError when the path does not exist or a glob matches nothing, Error for a bad
    rank pattern, KeyboardInterrupt on Ctrl-C (the load stops within a file); TypeError or
    ValueError, naming the argument, for an argument of the wrong kind or out of range (jobs as
    the command line's -j: 0 to 1024).
    """
    path_or_paths = _args.paths(path_or_paths, "path_or_paths")
    prefix = _args.optional_file_name(prefix, "prefix")
    rank_pattern = _args.optional_text(rank_pattern, "rank_pattern")
    jobs = _args.jobs(jobs)
    progress = _args.progress(progress)
    client = _args.client(client)
    root = resolve(path_or_paths)
    files = [os.fsencode(f) for f in root.files]
    if client is not None:
        from fr_analyze._dask import load_on_cluster

        loaded = load_on_cluster(client, os.fsencode(root.root), prefix, rank_pattern, files)
        return Trace(loaded, root.source)
    callback, close = make_progress(progress)
    try:
        loaded = _core.load(os.fsencode(root.root), prefix, rank_pattern, jobs, callback, files,
                            False)
    finally:
        close()
    return Trace(loaded, root.source)


def load_read_early(path: str, early: "_core.EarlyReads") -> Trace:
    """load(path) of a folder some of whose files `early` read while they were being written
    (the console's worker, as an upload is unpacked): the same trace, with those files not read
    again. For the console; not part of the package's API."""
    root = resolve(_args.paths(path, "path"))
    files = [os.fsencode(f) for f in root.files]
    return Trace(_core.load(os.fsencode(root.root), files=files, early=early), root.source)


def loads(dumps: Mapping[int, bytes], *, jobs: Optional[int] = None) -> Trace:
    """Loads dumps held in memory, keyed by global rank (for dumps fetched over HTTP).

    A rank is an int from 0 to 2^31-1, as everywhere in fr-analyze; another key, or a value
    that is not bytes, raises ValueError or TypeError naming it."""
    return Trace(_core.load_bytes(_args.dumps_by_rank(dumps, "dumps"), _args.jobs(jobs)),
                 "<memory>")


def analyze(
    path_or_paths: PathsArg,
    *,
    prefix: Optional[str] = None,
    rank_pattern: Optional[str] = None,
    jobs: Optional[int] = None,
    progress: ProgressArg = None,
    client: Any = None,
) -> "Report":
    """load(...) then Trace.analyze(): the report `fr-analyze analyze` prints, as an object.
    With `client` (a dask.distributed Client) the dumps are read on its workers; Dask unpickles
    what they return, so use only a cluster you control."""
    trace = load(path_or_paths, prefix=prefix, rank_pattern=rank_pattern, jobs=jobs,
                 progress=progress, client=client)
    return trace.analyze()


def analyze_log(text: str) -> "Report":
    """Analyses one log pasted from a terminal, with nothing else (`fr-analyze analyze -`).
    `text` is a str, or the bytes of a log file (read like one: UTF-16 and NUL padding too)."""

    text = _args.log_text(text, "text")
    core, failed, events = _core.analyze_with_logs(_core.LoadedTrace(), "<pasted>", [], -1, text)
    return Report(core, failed, events=events)

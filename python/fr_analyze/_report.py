"""Report: the analysis of one job, with attribute access mirroring proto/fr/report.proto.

    report = fr_analyze.analyze("/checkpoints/job42/fr")
    report.verdict.failure_class        # "missing_participant"
    report.verdict.culprit_ranks        # [37]
    print(report)                       # the text report `fr-analyze DIR` prints
    report.to_json()                    # `fr-analyze analyze DIR --format json`, byte for byte
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator, Optional

from fr_analyze import _args, _core, _frames
from fr_analyze.errors import Error

if TYPE_CHECKING:
    import pandas

    from fr_analyze._trace import Trace

# Fields that the report leaves out when they do not apply (a submessage not set, an optional
# number): reading one gives None rather than an error.
_ABSENT_IS_NONE = {"process_group", "majority_rank"}


class Message:
    """A read-only view of one message of the report: fields are attributes, nested messages are
    Messages, repeated fields are lists. `to_dict()` gives the plain dict."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict):
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return _wrap(self._fields[name])
        except KeyError:
            if name in _ABSENT_IS_NONE:
                return None
            raise AttributeError(
                f"report message has no field {name!r}; fields: {', '.join(self._fields)}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("reports are read-only")

    def __getitem__(self, name: str) -> Any:
        return _wrap(self._fields[name])

    def __contains__(self, name: str) -> bool:
        return name in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __dir__(self):
        return list(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and other._fields == self._fields

    def to_dict(self) -> dict:
        return json.loads(json.dumps(self._fields))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items()
                          if not isinstance(v, (dict, list)))
        return f"Message({inner})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Message(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Report:
    """What `fr-analyze analyze` finds, as an object (schema: proto/fr/report.proto).

    Top-level fields are attributes: verdict, inputs, process_groups, findings, stragglers, stats,
    ranks, timeline, log_files, schema_version; root_cause is verdict.root_cause (from the logs).
    pandas views: ranks_df(), findings_df(), collectives_df(), events_df().
    """

    def __init__(self, core: "_core.Report", trace: Optional["Trace"] = None,
                 events: Optional[dict] = None):
        self._core = core
        self._trace = trace
        self._events = events or {}
        self._json = core.json()
        # 64-bit integers are JSON numbers in fr-analyze's JSON (lib/fr/report/proto_json.h).
        self._fields = json.loads(self._json)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(Message(self._fields), name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._fields))

    @property
    def trace(self) -> "Trace":
        """The loaded dumps this report was made from."""
        if self._trace is None:
            raise Error("this report has no trace attached")
        return self._trace

    @property
    def root_cause(self) -> Optional[Message]:
        """Why the job died, from its logs: kind, ranks, hosts, time (UTC), evidence, detail.
        None when no log was read."""
        cause = self._fields.get("verdict", {}).get("root_cause")
        return None if cause is None else Message(cause)

    @property
    def is_failure(self) -> bool:
        """True when the verdict is a failure (the CLI then exits with status 1)."""
        return self._core.is_failure()

    @property
    def exit_status(self) -> int:
        """The exit status `fr-analyze analyze` gives for this report: 1 failure, 0 none."""
        return 1 if self.is_failure else 0

    def to_dict(self) -> dict:
        """The report as plain dicts and lists (int64 fields as ints)."""
        return json.loads(json.dumps(self._fields))

    def to_json(self) -> str:
        """Protobuf's JSON mapping with snake_case names: `fr-analyze analyze --format json`
        prints exactly this, plus a newline."""
        return self._json

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
        return _frames.ranks_df(self)

    def rank_states_df(self) -> "pandas.DataFrame":
        """One row per rank x process group: where the rank stands in it (state, op, seq)."""
        return _frames.rank_states_df(self)

    def findings_df(self) -> "pandas.DataFrame":
        """One row per finding, earliest cause first."""
        return _frames.findings_df(self)

    def events_df(self) -> "pandas.DataFrame":
        """One row per event parsed from the logs, on the corrected clock: time (UTC), raw time
        as printed, rank, host, kind, file, line, text; ordered by time."""
        return _frames.events_df(self._events)

    def collectives_df(self) -> "pandas.DataFrame":
        """One row per process group x collective seq: which ranks issued, started, completed."""
        return _frames.collectives_df(self)

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
        data = self.to_html().encode()
        with open(path, "wb") as f:
            f.write(data)
        return len(data)

    def _repr_html_(self) -> str:
        # A notebook shows the HTML report's own fragment: one renderer for pages and cells.
        return self.to_html(fragment=True)

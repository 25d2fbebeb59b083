"""Report: the analysis of one job, with attribute access mirroring proto/fr/report.proto.

    report = fr_analyze.analyze("/checkpoints/job42/fr")
    report.verdict.failure_class        # "missing_participant"
    report.verdict.culprit_ranks        # [37]
    print(report)                       # the text report `fr-analyze DIR` prints
    report.to_json()                    # `fr-analyze analyze DIR --format json`, byte for byte
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Iterator, Optional

from fr_analyze import _args, _core, _frames
from fr_analyze._paths import refuse_overwriting_input
from fr_analyze.errors import Error

if TYPE_CHECKING:
    import pandas

    from fr_analyze._trace import Trace

def _repeated(field) -> bool:
    # protobuf 5.29+ says is_repeated; older runtimes only have label.
    flag = getattr(field, "is_repeated", None)
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def _has_presence(field) -> bool:
    """A field that can be absent: a singular submessage or an `optional` scalar. The report
    leaves such a field out when it does not apply; reading it gives None."""
    if _repeated(field):
        return False
    return field.message_type is not None or field.containing_oneof is not None


def _value(field, value: Any) -> Any:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        value_field = message_type.fields_by_name["value"]
        return {k: _value(value_field, v) for k, v in value.items()}
    if _repeated(field):
        if message_type is not None:
            return [_message_dict(v) for v in value]
        return list(value)
    if message_type is not None:
        return _message_dict(value)
    return value


def _message_dict(message: Any) -> dict:
    """A report message as plain dicts and lists, every field as `--format json` prints it: in
    field-number order, those that do not apply left out, 64-bit integers as ints."""
    fields = {}
    for field in sorted(message.DESCRIPTOR.fields, key=lambda f: f.number):
        if _has_presence(field) and not message.HasField(field.name):
            continue
        fields[field.name] = _value(field, getattr(message, field.name))
    return fields


def _absent_is_none(fields: dict, name: str, descriptor: Any) -> bool:
    field = descriptor.fields_by_name.get(name) if descriptor is not None else None
    return field is not None and _has_presence(field) and name not in fields


class Message:
    """A read-only view of one message of the report: fields are attributes, nested messages are
    Messages, repeated fields are lists. `to_dict()` gives the plain dict."""

    __slots__ = ("_fields", "_descriptor")

    def __init__(self, fields: dict, descriptor: Any = None):
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_descriptor", descriptor)

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._fields[name]
        except KeyError:
            if _absent_is_none(self._fields, name, self._descriptor):
                return None
            raise AttributeError(
                f"report message has no field {name!r}; fields: {', '.join(self._fields)}"
            ) from None
        return _wrap(value, self._field_type(name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("reports are read-only")

    def __getitem__(self, name: str) -> Any:
        return _wrap(self._fields[name], self._field_type(name))

    def _field_type(self, name: str) -> Any:
        field = self._descriptor.fields_by_name.get(name) if self._descriptor is not None else None
        return None if field is None else field.message_type

    def __contains__(self, name: str) -> bool:
        return name in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __dir__(self):
        return list(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and other._fields == self._fields

    def to_dict(self) -> dict:
        return copy.deepcopy(self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items()
                          if not isinstance(v, (dict, list)))
        return f"Message({inner})"


def _wrap(value: Any, descriptor: Any = None) -> Any:
    if isinstance(value, dict):
        if descriptor is not None and descriptor.GetOptions().map_entry:
            return value  # a map: its keys are data, not field names
        return Message(value, descriptor)
    if isinstance(value, list):
        return [_wrap(v, descriptor) for v in value]
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
        # The typed message from its serialized bytes; the schema (proto/fr/report.proto) says
        # which fields may be absent. Imported here: `import fr_analyze` stays light.
        from fr_analyze import _report_pb2

        self._message = _report_pb2.Report.FromString(core.proto_bytes())
        self._fields = _message_dict(self._message)

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
        descriptor = self._message.DESCRIPTOR.fields_by_name["verdict"].message_type
        return None if cause is None else Message(
            cause, descriptor.fields_by_name["root_cause"].message_type)

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

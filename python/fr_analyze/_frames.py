"""pandas views of a Trace and a Report. Needs pandas (apt-get install python3-pandas).

Columns and dtypes (category where few distinct values repeat over many rows; nullable Int64
where a dump may not have recorded the value, shown as <NA>):

Trace.entries_df(): one row per rank x ring-buffer entry, ranks ascending, entries oldest first.
    rank int32 | record_id Int64 | process_group category (group name) | pg_desc category |
    pg_id Int64 | collective_seq_id Int64 | p2p_seq_id Int64 | op_id Int64 |
    op category ("all_reduce") | op_kind category | profiling_name category ("nccl:all_reduce") |
    state category (scheduled/started/completed/unknown) | peer_rank Int64 | is_p2p bool |
    retired bool | time_created_ns Int64 | time_discovered_started_ns Int64 |
    time_discovered_completed_ns Int64 | duration_ms float64 (NaN: not timed) | timeout_ms Int64 |
    input_sizes object (list of shapes) | input_dtypes object | output_sizes object |
    output_dtypes object | thread_name category | stack category (frames "name (file:line)",
    innermost first, one per line; "" when the dump has no stacks)

Report.ranks_df(): one row per rank the job had, ascending.
    rank int32 | role category (culprit/victim/healthy/missing) | last_op string | host category |
    state:<group desc or name> category, one column per kind of group (e.g. "state:DP"): where the
    rank stands in its group of that kind, "scheduled all_reduce #37"; several groups of one kind
    are joined with "; "; <NA> when the rank is in no such group.

Report.findings_df(): one row per finding, earliest cause first.
    kind category | ranks object (list of int) | process_group category | pg_desc category |
    collective_seq_id int32 (-1: not applicable) | op category | confidence category |
    summary string | evidence string (one fact per line) | stack string (one frame per line)

Report.collectives_df(): one row per process group x collective seq still in some buffer.
    process_group category | pg_desc category | seq int64 | op category | members int32 |
    n_issued, n_started, n_completed, n_not_issued, n_dump_missing int32 |
    issued, started, completed, not_issued, dump_missing object (lists of global ranks) |
    first_divergence bool (the report's first divergent seq of that group)
  Every member is in exactly one of issued / not_issued / dump_missing; completed is a subset of
  started, which is a subset of issued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fr_analyze import _core
from fr_analyze.errors import require

if TYPE_CHECKING:
    import pandas

    from fr_analyze._report import Report
    from fr_analyze._trace import Trace

ROLES = ["culprit", "victim", "healthy", "missing"]
STATES = ["scheduled", "started", "completed", "unknown"]


def _pandas():
    return require("pandas", "pandas tables (entries_df, ranks_df, ...)", "python3-pandas")


def _nullable(values: list, pd) -> "pandas.Series":
    return pd.array([None if v == -1 else v for v in values], dtype="Int64")


def _frame_text(frames) -> str:
    return "\n".join(f"{name} ({filename}:{line})" for name, filename, line in frames)


def entries_df(trace: "Trace") -> "pandas.DataFrame":
    """One row per rank x entry (columns: see the module docstring)."""
    pd = _pandas()
    columns: dict = {name: [] for name in (
        "rank", "record_id", "process_group", "pg_desc", "pg_id", "collective_seq_id",
        "p2p_seq_id", "op_id", "op", "op_kind", "profiling_name", "state", "peer_rank", "is_p2p",
        "retired", "time_created_ns", "time_discovered_started_ns",
        "time_discovered_completed_ns", "duration_ms", "timeout_ms", "input_sizes",
        "input_dtypes", "output_sizes", "output_dtypes", "thread_name", "stack")}
    for dump in trace.ranks:
        strings: dict = {}
        stacks: dict = {}

        def text(string_id: int) -> str:
            value = strings.get(string_id)
            if value is None:
                value = strings[string_id] = dump.string(string_id)
            return value

        groups = [(text(g.name_id), text(g.desc_id)) for g in dump.groups]
        for e in dump.entries:
            name, desc = groups[e.group]
            columns["rank"].append(dump.rank)
            columns["record_id"].append(e.record_id)
            columns["process_group"].append(name)
            columns["pg_desc"].append(desc)
            columns["pg_id"].append(e.pg_id)
            columns["collective_seq_id"].append(e.collective_seq_id)
            columns["p2p_seq_id"].append(e.p2p_seq_id)
            columns["op_id"].append(e.op_id)
            columns["op"].append(text(e.op_name_id))
            columns["op_kind"].append(e.op_kind)
            columns["profiling_name"].append(text(e.profiling_name_id))
            columns["state"].append(e.state)
            columns["peer_rank"].append(e.peer_rank)
            columns["is_p2p"].append(e.is_p2p)
            columns["retired"].append(e.retired)
            columns["time_created_ns"].append(e.time_created_ns)
            columns["time_discovered_started_ns"].append(e.time_discovered_started_ns)
            columns["time_discovered_completed_ns"].append(e.time_discovered_completed_ns)
            columns["duration_ms"].append(e.duration_ms)
            columns["timeout_ms"].append(e.timeout_ms)
            columns["input_sizes"].append(dump.shapes(e.input_sizes_id))
            columns["input_dtypes"].append(dump.dtypes(e.input_dtypes_id))
            columns["output_sizes"].append(dump.shapes(e.output_sizes_id))
            columns["output_dtypes"].append(dump.dtypes(e.output_dtypes_id))
            columns["thread_name"].append(text(e.thread_name_id))
            stack = stacks.get(e.stack_id)
            if stack is None:
                stack = stacks[e.stack_id] = _frame_text(dump.stack(e.stack_id))
            columns["stack"].append(stack)
    frame = pd.DataFrame(columns)
    frame["rank"] = frame["rank"].astype("int32")
    for name in ("record_id", "pg_id", "collective_seq_id", "p2p_seq_id", "op_id", "peer_rank",
                 "time_created_ns", "time_discovered_started_ns",
                 "time_discovered_completed_ns", "timeout_ms"):
        frame[name] = _nullable(columns[name], pd)
    for name in ("process_group", "pg_desc", "op", "op_kind", "profiling_name", "thread_name",
                 "stack"):
        frame[name] = frame[name].astype("category")
    frame["state"] = pd.Categorical(columns["state"], categories=STATES)
    frame["duration_ms"] = frame["duration_ms"].astype("float64")
    frame["is_p2p"] = frame["is_p2p"].astype(bool)
    frame["retired"] = frame["retired"].astype(bool)
    return frame


def _group_label(group: dict) -> str:
    return group["desc"] or group["name"]


def ranks_df(report: "Report") -> "pandas.DataFrame":
    """One row per rank (columns: see the module docstring)."""
    pd = _pandas()
    fields = report._fields
    rows = sorted(fields["ranks"], key=lambda r: r["rank"])
    states: dict = {}  # column -> rank -> [state text]
    for group in fields["process_groups"]:
        column = f"state:{_group_label(group['group'])}"
        per_rank = states.setdefault(column, {})
        for state in group["states"]:
            text = state["state"]
            if state["op"]:
                text += f" {state['op']}"
            if state["seq_id"] >= 0:
                text += f" #{state['seq_id']}"
            for rank in state["ranks"]:
                per_rank.setdefault(rank, []).append(text)
    frame = pd.DataFrame({
        "rank": pd.array([r["rank"] for r in rows], dtype="int32"),
        "role": pd.Categorical([r["role"] for r in rows], categories=ROLES),
        "last_op": pd.array([r["last_op"] for r in rows], dtype="string"),
        "host": pd.Categorical([r["host"] for r in rows]),
    })
    for column in sorted(states):
        per_rank = states[column]
        values = ["; ".join(per_rank[r["rank"]]) if r["rank"] in per_rank else None
                  for r in rows]
        frame[column] = pd.Categorical(values)
    return frame


def findings_df(report: "Report") -> "pandas.DataFrame":
    """One row per finding (columns: see the module docstring)."""
    pd = _pandas()
    findings = report._fields["findings"]
    return pd.DataFrame({
        "kind": pd.Categorical([f["kind"] for f in findings]),
        "ranks": [list(f["ranks"]) for f in findings],
        "process_group": pd.Categorical([f["process_group"]["name"] for f in findings]),
        "pg_desc": pd.Categorical([f["process_group"]["desc"] for f in findings]),
        "collective_seq_id": pd.array([f["collective_seq_id"] for f in findings], dtype="int32"),
        "op": pd.Categorical([f["op"] for f in findings]),
        "confidence": pd.Categorical([f["confidence"] for f in findings],
                                     categories=["high", "medium", "low"]),
        "summary": pd.array([f["summary"] for f in findings], dtype="string"),
        "evidence": pd.array(["\n".join(f["evidence"]) for f in findings], dtype="string"),
        "stack": pd.array(["\n".join(f["stack"]) for f in findings], dtype="string"),
    })


def collectives_df(report: "Report") -> "pandas.DataFrame":
    """One row per process group x collective seq (columns: see the module docstring)."""
    pd = _pandas()
    groups, rows = _core.collective_table(report.trace._loaded)
    divergence = {
        (g["group"]["name"], tuple(g["group"]["ranks"])): g["first_divergence_seq"]
        for g in report._fields["process_groups"]
    }
    first = [divergence.get((groups[r.group][0], tuple(groups[r.group][2])), -1) for r in rows]
    lists = {name: [list(getattr(r, name)) for r in rows]
             for name in ("issued", "started", "completed", "not_issued", "dump_missing")}
    frame = pd.DataFrame({
        "process_group": pd.Categorical([groups[r.group][0] for r in rows]),
        "pg_desc": pd.Categorical([groups[r.group][1] for r in rows]),
        "seq": pd.array([r.seq for r in rows], dtype="int64"),
        "op": pd.Categorical([r.op for r in rows]),
        "members": pd.array([len(groups[r.group][2]) for r in rows], dtype="int32"),
    })
    for name, values in lists.items():
        frame[f"n_{name}"] = pd.array([len(v) for v in values], dtype="int32")
    for name, values in lists.items():
        frame[name] = values
    frame["first_divergence"] = [r.seq == f for r, f in zip(rows, first)]
    return frame

"""pandas views of a Trace and a Report. Needs pandas (apt-get install python3-pandas).

Each function takes plain data, never a Trace or a Report: the loaded dumps (the core's
LoadedTrace), the report as plain dicts (what Report.to_dict() gives), or the log events' columns.

Columns and dtypes (category where few distinct values repeat over many rows; nullable Int64
where a dump may not have recorded the value, shown as <NA>):

Trace.entries_df(): one row per rank x ring-buffer entry, ranks ascending, entries oldest first,
built column by column in C++ (lib/fr/report/entries_table.h).
    rank int32 | record_id Int64 | process_group category (group name) | pg_desc category |
    pg_id Int64 | collective_seq_id Int64 | p2p_seq_id Int64 | op_id Int64 |
    op category ("all_reduce") | op_kind category | profiling_name category ("nccl:all_reduce") |
    state category (scheduled/started/completed/unknown) | state_from_batch bool (the state is
    the entry closing its coalesced group or batch: PyTorch records none for members) |
    peer_rank Int64 | is_p2p bool | retired bool |
    time_created, time_discovered_started, time_discovered_completed datetime64[ns, UTC] (NaT:
    not recorded; each host's own clock) | duration_ms float64 (NaN: not timed) |
    timeout_ms Int64 | input_sizes, output_sizes category ("[[4, 4]]") | input_dtypes,
    output_dtypes category ("[Float]") | thread_name category | frames category (the stack,
    "name (file:line)" innermost first, one per line; "" when the dump has no stacks)

Report.ranks_df(): one row per rank the job had, ascending.
    rank int32 | role category (culprit/victim/healthy/missing) | last_op string | host category |
    state:<group desc or name> category, one column per kind of group (e.g. "state:DP"): where the
    rank stands in its group of that kind, "scheduled all_reduce #37"; several groups of one kind
    are joined with "; "; <NA> when the rank is in no such group.

Report.rank_states_df(): the same states as a long table, one row per rank x process group it
is a member of (ranks, then groups as the report lists them), for filtering and grouping.
    rank int32 | process_group category (group name) | pg_desc category |
    state category (completed/started/scheduled/not issued/dump missing/...) | op category |
    seq Int64 (collective seq; p2p seq in groups of only send/recv; <NA>: none) |
    last_issued_op category | last_issued_seq Int64 (only for "not issued": the last op the rank
    did issue in that group; op and seq are then <NA>)

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

ROLES = ["culprit", "victim", "healthy", "missing"]


def _pandas():
    return require("pandas", "pandas tables (entries_df, ranks_df, ...)", "python3-pandas")


def _nullable(values, pd) -> "pandas.arrays.IntegerArray":
    """int64 values with -1 (not recorded) masked as <NA>."""
    return pd.arrays.IntegerArray(values, values == -1)


def _times(values, pd) -> "pandas.DatetimeIndex":
    """ns since the epoch, -1 (not recorded) as NaT, in UTC."""
    times = pd.to_datetime(values, unit="ns", utc=True)
    return times.where(values != -1)


def entries_df(loaded: "_core.LoadedTrace") -> "pandas.DataFrame":
    """One row per rank x entry of the loaded dumps (columns: see the module docstring)."""
    pd = _pandas()
    import numpy as np  # pandas needs numpy

    raw = _core.entries_columns(loaded)
    types = {"rank": np.int32, "duration_ms": np.float64, "is_p2p": np.uint8,
             "retired": np.uint8, "state_from_batch": np.uint8}
    c = {name: np.frombuffer(value, dtype=types.get(name, np.int64))
         for name, value in raw.items() if isinstance(value, bytes)}

    def categorical(name):
        codes, categories = raw[name]
        return pd.Categorical.from_codes(np.frombuffer(codes, dtype=np.int32),
                                         categories=categories)

    frame = pd.DataFrame({
        "rank": c["rank"],
        "record_id": _nullable(c["record_id"], pd),
        "process_group": categorical("process_group"),
        "pg_desc": categorical("pg_desc"),
        "pg_id": _nullable(c["pg_id"], pd),
        "collective_seq_id": _nullable(c["collective_seq_id"], pd),
        "p2p_seq_id": _nullable(c["p2p_seq_id"], pd),
        "op_id": _nullable(c["op_id"], pd),
        "op": categorical("op"),
        "op_kind": categorical("op_kind"),
        "profiling_name": categorical("profiling_name"),
        "state": categorical("state"),
        "state_from_batch": c["state_from_batch"].astype(bool),
        "peer_rank": _nullable(c["peer_rank"], pd),
        "is_p2p": c["is_p2p"].astype(bool),
        "retired": c["retired"].astype(bool),
        "time_created": _times(c["time_created_ns"], pd),
        "time_discovered_started": _times(c["time_discovered_started_ns"], pd),
        "time_discovered_completed": _times(c["time_discovered_completed_ns"], pd),
        "duration_ms": c["duration_ms"],
        "timeout_ms": _nullable(c["timeout_ms"], pd),
        "input_sizes": categorical("input_sizes"),
        "input_dtypes": categorical("input_dtypes"),
        "output_sizes": categorical("output_sizes"),
        "output_dtypes": categorical("output_dtypes"),
        "thread_name": categorical("thread_name"),
        "frames": categorical("frames"),
    })
    return frame


def _group_label(group: dict) -> str:
    return group["desc"] or group["name"]


def _state_text(state: dict) -> str:
    # A "not issued" state carries the last op the ranks did issue, not the one they skipped.
    what = state["op"]
    if state["seq_id"] >= 0:
        what = f"{what} #{state['seq_id']}".strip()
    if state["state"] == "not issued":
        return f"not issued (last issued {what})" if what else "not issued"
    return f"{state['state']} {what}".strip()


def ranks_df(fields: dict) -> "pandas.DataFrame":
    """One row per rank of the report `fields` (columns: see the module docstring)."""
    pd = _pandas()
    rows = sorted(fields["ranks"], key=lambda r: r["rank"])
    states: dict = {}  # column -> rank -> [state text]
    for group in fields["process_groups"]:
        column = f"state:{_group_label(group['group'])}"
        per_rank = states.setdefault(column, {})
        for state in group["states"]:
            text = _state_text(state)
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


def rank_states_df(fields: dict) -> "pandas.DataFrame":
    """One row per rank x group it is in, from the report `fields` (columns: see the module
    docstring)."""
    pd = _pandas()
    rows = []
    for order, group in enumerate(fields["process_groups"]):
        ref = group["group"]
        for state in group["states"]:
            for rank in state["ranks"]:
                rows.append((rank, order, ref["name"], ref["desc"], state["state"], state["op"],
                             state["seq_id"]))
    rows.sort(key=lambda row: (row[0], row[1]))
    # A "not issued" state's op and seq are the last ones its ranks issued: they go to the
    # last_issued columns, never to op/seq, which say where a rank is.
    not_issued = [row[4] == "not issued" for row in rows]
    return pd.DataFrame({
        "rank": pd.array([row[0] for row in rows], dtype="int32"),
        "process_group": pd.Categorical([row[2] for row in rows]),
        "pg_desc": pd.Categorical([row[3] for row in rows]),
        "state": pd.Categorical([row[4] for row in rows]),
        "op": pd.Categorical([None if n else row[5] for row, n in zip(rows, not_issued)]),
        "seq": pd.array([None if n or row[6] < 0 else row[6] for row, n in zip(rows, not_issued)],
                        dtype="Int64"),
        "last_issued_op": pd.Categorical([row[5] if n else None
                                          for row, n in zip(rows, not_issued)]),
        "last_issued_seq": pd.array([row[6] if n and row[6] >= 0 else None
                                     for row, n in zip(rows, not_issued)], dtype="Int64"),
    })


def findings_df(fields: dict) -> "pandas.DataFrame":
    """One row per finding of the report `fields` (columns: see the module docstring)."""
    pd = _pandas()
    findings = fields["findings"]
    return pd.DataFrame({
        "kind": pd.Categorical([f["kind"] for f in findings]),
        "ranks": [list(f["ranks"]) for f in findings],
        # Findings from monitor snapshots belong to no process group: the JSON leaves it out.
        "process_group": pd.Categorical([f.get("process_group", {}).get("name", "")
                                         for f in findings]),
        "pg_desc": pd.Categorical([f.get("process_group", {}).get("desc", "") for f in findings]),
        "collective_seq_id": pd.array([f["collective_seq_id"] for f in findings], dtype="int32"),
        "op": pd.Categorical([f["op"] for f in findings]),
        "confidence": pd.Categorical([f["confidence"] for f in findings],
                                     categories=["high", "medium", "low"]),
        "summary": pd.array([f["summary"] for f in findings], dtype="string"),
        "evidence": pd.array(["\n".join(f["evidence"]) for f in findings], dtype="string"),
        "stack": pd.array(["\n".join(f["stack"]) for f in findings], dtype="string"),
    })


def collectives_df(loaded: "_core.LoadedTrace", fields: dict) -> "pandas.DataFrame":
    """One row per process group x collective seq of the loaded dumps, with the first divergent
    seq the report `fields` found (columns: see the module docstring)."""
    pd = _pandas()
    groups, rows = _core.collective_table(loaded)
    divergence = {
        (g["group"]["name"], tuple(g["group"]["ranks"])): g["first_divergence_seq"]
        for g in fields["process_groups"]
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


def events_df(columns: dict) -> "pandas.DataFrame":
    """Columns: time (datetime64[ns, UTC], corrected; NaT when no line carried a time),
    raw_time (as printed), rank (Int64, <NA> when unknown), host, kind ("xid",
    "watchdog_timeout", ...), file, line, text. Ordered by corrected time, then file and line."""
    pd = _pandas()
    names = ["time_ns", "raw_time", "rank", "host", "kind", "file", "line", "text"]
    data = {name: list(columns.get(name, [])) for name in names}
    import numpy

    times = _times(numpy.array([-1 if t is None else t for t in data["time_ns"]],
                               dtype=numpy.int64), pd)
    frame = pd.DataFrame({
        "time": times,
        "raw_time": pd.Series(data["raw_time"], dtype="object"),
        "rank": pd.array([None if r < 0 else r for r in data["rank"]], dtype="Int64"),
        "host": pd.Series(data["host"], dtype="object"),
        "kind": pd.Categorical(data["kind"]),
        "file": pd.Series(data["file"], dtype="object"),
        "line": pd.Series(data["line"], dtype="int64"),
        "text": pd.Series(data["text"], dtype="object"),
    })
    return frame.sort_values(["time", "file", "line"], kind="stable",
                             na_position="last").reset_index(drop=True)

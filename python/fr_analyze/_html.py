"""HTML for Jupyter: Report (verdict first, grouped rank states, collapsible evidence and stacks)
and Trace (what was loaded). Plain HTML with <details>; no JavaScript, no network."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Iterable, List

if TYPE_CHECKING:
    from fr_analyze._report import Report
    from fr_analyze._trace import Trace

_STYLE = (
    "<style>"
    ".fr-an table{border-collapse:collapse;margin:4px 0}"
    ".fr-an td,.fr-an th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
    ".fr-an .fr-verdict{border-left:6px solid #c0392b;padding:4px 10px;margin-bottom:8px}"
    ".fr-an .fr-ok{border-left-color:#27ae60}"
    ".fr-an .fr-culprit{color:#c0392b;font-weight:bold}"
    ".fr-an pre{margin:2px 0;font-size:90%}"
    "</style>"
)


def _ranks_text(ranks: Iterable[int]) -> str:
    """Compact ranges: [0,1,2,5] -> "0-2,5"."""
    ranks = sorted(ranks)
    parts: List[str] = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(parts) or "none"


def _group_label(group: dict) -> str:
    name = group.get("name", "")
    return f"{name} ({group['desc']})" if group.get("desc") else name


def _table(header: List[str], rows: Iterable[List[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _verdict(fields: dict) -> str:
    v = fields["verdict"]
    ok = v["failure_class"] == "none"
    lines = [
        f"<div class='fr-verdict{' fr-ok' if ok else ''}'>",
        f"<b>fr-analyze: {escape(v['failure_class'])}</b> (confidence {escape(v['confidence'])})",
        f"<p>{escape(v['summary'])}</p>",
    ]
    if v["culprit_ranks"]:
        lines.append("<b>culprits:</b> <span class='fr-culprit'>"
                     f"{escape(_ranks_text(v['culprit_ranks']))}</span><br>")
    if v["victim_ranks"]:
        lines.append(f"<b>victims:</b> {len(v['victim_ranks'])} ranks "
                     f"[{escape(_ranks_text(v['victim_ranks']))}]<br>")
    if v["op"]:
        lines.append(f"<b>where:</b> group {escape(_group_label(v['process_group']))} "
                     f"{escape(v['op'])} #{v['collective_seq_id']}<br>")
    if v["next_actions"]:
        lines.append("<b>next actions:</b><ol>"
                     + "".join(f"<li>{escape(a)}</li>" for a in v["next_actions"]) + "</ol>")
    lines.append("</div>")
    return "".join(lines)


def _root_cause(fields: dict) -> str:
    """From the logs: what happened, to whom, when, and the lines that say so (before the
    dumps' verdict, as in the text report)."""
    cause = fields["verdict"].get("root_cause")
    if not cause:
        return ""
    ok = cause["kind"] == "none"
    who = ""
    if cause["ranks"]:
        who = f" on rank(s) <span class='fr-culprit'>{escape(_ranks_text(cause['ranks']))}</span>"
    if cause["hosts"]:
        who += f" ({escape(', '.join(cause['hosts']))})"
    when = f" at {escape(cause['time'])}" if cause["time"] else ""
    lines = [f"<div class='fr-verdict{' fr-ok' if ok else ''}'>",
             f"<b>root cause: {escape(cause['kind'])}</b>{who}{when} "
             f"(confidence {escape(cause['confidence'])})",
             f"<p>{escape(cause['summary'])}</p>"]
    if cause.get("disagreement"):
        lines.append(f"<p><b>note:</b> {escape(cause['disagreement'])}</p>")
    if cause["evidence"]:
        rows = [[escape(f"{e['file']}:{e['line']}"), escape(e["time"] or e["raw_time"]),
                 escape(str(e["rank"]) if e["rank"] >= 0 else ""),
                 f"<pre>{escape(e['text'])}</pre>"] for e in cause["evidence"]]
        lines.append("<details open><summary>evidence</summary>"
                     + _table(["where", "time (UTC)", "rank", "line"], rows) + "</details>")
    lines.append("</div>")
    return "".join(lines)


def _clocks(fields: dict) -> str:
    hosts = fields.get("timeline", {}).get("hosts", [])
    if len(hosts) < 2:
        return ""
    rows = [[escape(h["host"] or "(unknown)"), f"{h['offset_ms']:+d} ms",
             escape(h["confidence"]), escape(h["method"])] for h in hosts]
    return (f"<details><summary>host clocks ({len(hosts)})</summary>"
            + _table(["host", "offset", "confidence", "how"], rows) + "</details>")


def _chains(fields: dict) -> str:
    chains = fields["verdict"]["chains"]
    if not chains:
        return ""
    items = []
    for chain in chains:
        hops = [f"rank {chain['edges'][0]['waiter']}"] if chain["edges"] else []
        for edge in chain["edges"]:
            group = _group_label(edge["process_group"])
            hops.append(f"--[{edge['op']} #{edge['seq_id']} in group {group}: {edge['reason']}]--> "
                        f"rank {edge['waits_for']}")
        items.append("<li><code>" + escape(" ".join(hops)) + "</code></li>")
    return ("<details open><summary><b>how the victims wait</b></summary><ul>" + "".join(items)
            + "</ul></details>")


def _groups(fields: dict) -> str:
    groups = fields["process_groups"]
    # Groups where something diverged first: those are the ones a person looks at.
    ordered = sorted(groups, key=lambda g: g["first_divergence_seq"] < 0)
    rows = []
    for g in ordered:
        states = "<br>".join(
            escape(f"[{s['ranks_text'] or _ranks_text(s['ranks'])}] {s['state']}"
                   + (f" {s['op']}" if s["op"] else "")
                   + (f" #{s['seq_id']}" if s["seq_id"] >= 0 else ""))
            for s in g["states"])
        first = g["first_divergence_seq"]
        rows.append([escape(_group_label(g["group"])), escape(_ranks_text(g["group"]["ranks"])),
                     "" if first < 0 else f"#{first}", str(g["collectives_matched"]), states])
    diverged = sum(1 for g in groups if g["first_divergence_seq"] >= 0)
    return (f"<details {'open' if diverged else ''}><summary><b>process groups</b> "
            f"({len(groups)}, {diverged} diverged)</summary>"
            + _table(["group", "ranks", "first divergence", "matched", "rank states"], rows)
            + "</details>")


def _findings(fields: dict) -> str:
    parts = []
    for f in fields["findings"]:
        body = ""
        if f["evidence"]:
            body += "<pre>" + escape("\n".join(f["evidence"])) + "</pre>"
        if f["stack"]:
            body += ("<details><summary>stack (innermost first)</summary><pre>"
                     + escape("\n".join(f["stack"])) + "</pre></details>")
        parts.append(
            f"<details><summary><b>{escape(f['kind'])}</b> ranks "
            f"{escape(_ranks_text(f['ranks']))} ({escape(f['confidence'])}): "
            f"{escape(f['summary'])}</summary>{body}</details>")
    return f"<p><b>findings</b> ({len(parts)})</p>" + "".join(parts) if parts else ""


def _inputs(fields: dict) -> str:
    i = fields["inputs"]
    rows = [["ranks loaded", escape(_ranks_text(i["ranks_loaded"]))],
            ["ranks missing", escape(_ranks_text(i["ranks_missing"]))],
            ["versions", escape(", ".join(i["versions"]))],
            ["files rejected",
             "<br>".join(escape(f["error"]) for f in i["files_rejected"]) or "none"]]
    return ("<details><summary><b>inputs</b> " + escape(i["source"]) + "</summary>"
            + _table(["", ""], rows) + "</details>")


def report_html(report: "Report") -> str:
    fields = report._fields
    return ("<div class='fr-an'>" + _STYLE + _root_cause(fields) + _verdict(fields)
            + _chains(fields) + _groups(fields) + _findings(fields) + _inputs(fields)
            + _clocks(fields) + "</div>")


def trace_html(trace: "Trace") -> str:
    summary = trace.summary()
    rows = [["source", escape(trace.source)],
            ["ranks loaded", f"{len(trace)}: {escape(_ranks_text(trace.rank_ids))}"],
            ["ranks missing", escape(_ranks_text(trace.missing_ranks))],
            ["versions", escape(", ".join(trace.versions))]]
    groups = [[escape(_group_label(g)), escape(_ranks_text(g.get("ranks") or []))]
              for g in summary["process_groups"]]
    rejected = [[escape(r.path), escape(r.error)] for r in trace.rejected]
    html = "<div class='fr-an'>" + _STYLE + "<b>fr-analyze trace</b>" + _table(["", ""], rows)
    html += (f"<details><summary>process groups ({len(groups)})</summary>"
             + _table(["group", "ranks"], groups) + "</details>")
    if rejected:
        html += (f"<details open><summary>rejected files ({len(rejected)})</summary>"
                 + _table(["path", "error"], rejected) + "</details>")
    return html + "</div>"

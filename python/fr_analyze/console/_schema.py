"""The console's tables, one definition for SQLite and PostgreSQL (the migrations create exactly
these; tests/python/test_console_store.py checks that the two agree).

An analysis row is written once, in the same transaction as its inputs, culprits and hosts, when
the analysis has ended (done or failed): a server killed mid-analysis leaves no row at all, and
never a row without its inputs.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

analyses = sa.Table(
    "analyses",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    # Milliseconds since the epoch, UTC: one type that both databases compare and index alike.
    sa.Column("created_ms", sa.BigInteger, nullable=False, index=True),
    sa.Column("name", sa.Text, nullable=False, default=""),
    sa.Column("label", sa.Text, nullable=False, default="", index=True),
    # done | failed (the analysis itself failed: the reason is in `error`).
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error", sa.Text, nullable=False, default=""),
    sa.Column("failure_class", sa.String(64), nullable=False, default="", index=True),
    sa.Column("root_kind", sa.String(64), nullable=False, default="", index=True),
    sa.Column("confidence", sa.String(16), nullable=False, default=""),
    sa.Column("culprit_text", sa.Text, nullable=False, default=""),
    sa.Column("hosts_text", sa.Text, nullable=False, default=""),
    # How many hosts took part: a host's fair share of a failure is 1 / hosts (the fleet page).
    sa.Column("host_count", sa.Integer, nullable=False, default=0),
    sa.Column("input_bytes", sa.BigInteger, nullable=False, default=0),
    sa.Column("seconds", sa.Float, nullable=False, default=0.0),
    sa.Column("fr_version", sa.String(32), nullable=False, default=""),
    # The report exactly as `fr-analyze analyze --format json` wrote it ("" when failed).
    sa.Column("report", sa.Text, nullable=False, default=""),
)

inputs = sa.Table(
    "inputs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("analysis_id", sa.String(32), sa.ForeignKey("analyses.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False, index=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    # Why the upload set this file aside before analysis ("" when it was analysed).
    sa.Column("skipped", sa.Text, nullable=False, default=""),
)

blobs = sa.Table(
    "blobs",
    metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("stored_size", sa.BigInteger, nullable=False),
)

culprits = sa.Table(
    "culprits",
    metadata,
    sa.Column("analysis_id", sa.String(32), sa.ForeignKey("analyses.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("rank", sa.Integer, nullable=False, index=True),
)

# One row per host (and GPU, where an Xid line names its PCI bus id) of a failed analysis:
# whether it initiated the failure or was only a victim of it.
analysis_hosts = sa.Table(
    "analysis_hosts",
    metadata,
    sa.Column("analysis_id", sa.String(32), sa.ForeignKey("analyses.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("gpu", sa.Text, nullable=False, default=""),
    sa.Column("role", sa.String(16), nullable=False),  # initiated | victim | healthy
    sa.Column("kind", sa.String(64), nullable=False, default=""),
    sa.Column("created_ms", sa.BigInteger, nullable=False),
    # Covers the fleet query (grouped by the first four, reads the last two) and the history's
    # host= filter (its first column): migration 0002.
    sa.Index("ix_analysis_hosts_fleet", "host", "gpu", "role", "kind", "created_ms",
             "analysis_id"),
)

"""The first schema: analyses, their inputs (content-addressed blobs), culprits and hosts.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "analyses",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("failure_class", sa.String(64), nullable=False),
        sa.Column("root_kind", sa.String(64), nullable=False),
        sa.Column("confidence", sa.String(16), nullable=False),
        sa.Column("culprit_text", sa.Text, nullable=False),
        sa.Column("hosts_text", sa.Text, nullable=False),
        sa.Column("host_count", sa.Integer, nullable=False),
        sa.Column("input_bytes", sa.BigInteger, nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("fr_version", sa.String(32), nullable=False),
        sa.Column("report", sa.Text, nullable=False),
    )
    for column in ("created_ms", "label", "failure_class", "root_kind"):
        op.create_index(f"ix_analyses_{column}", "analyses", [column])
    op.create_table(
        "inputs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("analysis_id", sa.String(32),
                  sa.ForeignKey("analyses.id", ondelete="CASCADE"), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("skipped", sa.Text, nullable=False),
    )
    op.create_index("ix_inputs_analysis_id", "inputs", ["analysis_id"])
    op.create_index("ix_inputs_sha256", "inputs", ["sha256"])
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("stored_size", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "culprits",
        sa.Column("analysis_id", sa.String(32),
                  sa.ForeignKey("analyses.id", ondelete="CASCADE"), nullable=False),
        sa.Column("rank", sa.Integer, nullable=False),
    )
    op.create_index("ix_culprits_analysis_id", "culprits", ["analysis_id"])
    op.create_index("ix_culprits_rank", "culprits", ["rank"])
    op.create_table(
        "analysis_hosts",
        sa.Column("analysis_id", sa.String(32),
                  sa.ForeignKey("analyses.id", ondelete="CASCADE"), nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("gpu", sa.Text, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_analysis_hosts_analysis_id", "analysis_hosts", ["analysis_id"])
    op.create_index("ix_analysis_hosts_host", "analysis_hosts", ["host"])


def downgrade():
    for table in ("analysis_hosts", "culprits", "blobs", "inputs", "analyses"):
        op.drop_table(table)

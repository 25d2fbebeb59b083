"""An index on analysis_hosts that covers the fleet query.

The fleet page groups every host row of a failed job by (host, gpu, role, kind) and reads
created_ms and analysis_id (to join the analysis's host count). With the columns in that order
in one index, the database reads the index in group order and never the table nor a sort: on
SQLite with 10,000 analyses (206,480 host rows) the query went from 279 ms to 117 ms. Its first
column serves the history's host= filter too, so the index on host alone goes.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

FLEET_COLUMNS = ["host", "gpu", "role", "kind", "created_ms", "analysis_id"]


def upgrade():
    op.create_index("ix_analysis_hosts_fleet", "analysis_hosts", FLEET_COLUMNS)
    op.drop_index("ix_analysis_hosts_host", table_name="analysis_hosts")


def downgrade():
    op.create_index("ix_analysis_hosts_host", "analysis_hosts", ["host"])
    op.drop_index("ix_analysis_hosts_fleet", table_name="analysis_hosts")

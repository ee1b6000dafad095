"""job_runs.heartbeat_at: the time a running job last said it was alive.

A run left "running" by a process that died (a crash, a replica killed) read as running until
a process with the scheduler started again: the front page showed the first backfill
running for good, and a night whose run died counted as run. A live run renews the time
every minute (bot.store.jobs.keep_alive); a "running" row whose time (or, without one, its
start) is older than the lease reads as interrupted. Rows stored before have none; the
downgrade drops it.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


# Plain ADD COLUMN (SQLite has it; DROP COLUMN since 3.35): no table copy.


def upgrade() -> None:
    op.add_column("job_runs", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("job_runs", "heartbeat_at")

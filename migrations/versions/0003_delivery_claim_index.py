"""Index deliveries on (status, next_attempt_at): the worker's claim picks the oldest takeable
rows (pending and due, or processing with a lapsed lease). With only (status, id), SQLite read
each pending row to test next_attempt_at, a column stored after the payload, so behind a 13 KB
payload's overflow pages: a claim behind a backlog of 4,000 deliveries read about 50 MB and
took 4-90 ms, inside the worker's write transaction (docs/performance.md). This index answers
the claim's test without touching the rows.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_deliveries_status_next_attempt", "deliveries", ["status", "next_attempt_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_deliveries_status_next_attempt", table_name="deliveries")

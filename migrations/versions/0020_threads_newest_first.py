"""Index the threads newest first (scale64).

Every list of threads is newest first (`ORDER BY created_at DESC NULLS LAST, id DESC`: the
front page's recent failure reports, /proposals, /api/proposals, the failure and method
pages). With no index on the date, the database joined every tracked thread with its analysis
and sorted them all to keep the first 15 or 500: on 20,000 threads the front page's 15 took
119 ms on PostgreSQL and 177 ms on SQLite; read in the index's order the reading stops after
the first few that match (0.1 and 0.2 ms). PostgreSQL's index says NULLS LAST; SQLite has no
such clause in an index, and its descending order puts NULL last already. Like 0002 and 0018,
the models do not declare it. The downgrade drops it.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    nulls = " NULLS LAST" if op.get_bind().dialect.name == "postgresql" else ""
    op.create_index("ix_threads_created_at_id", "threads",
                    [sa.text(f"created_at DESC{nulls}"), sa.text("id DESC")])


def downgrade() -> None:
    op.drop_index("ix_threads_created_at_id", table_name="threads")

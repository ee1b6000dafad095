"""Index threads on lower(repo), number: repository names are case-insensitive on GitHub and
every lookup compares them lowered; without this index each lookup scans the table.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_threads_lower_repo_number", "threads", [sa.text("lower(repo)"), "number"]
    )


def downgrade() -> None:
    op.drop_index("ix_threads_lower_repo_number", table_name="threads")

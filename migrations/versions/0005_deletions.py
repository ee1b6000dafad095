"""deletions: the threads and comments GitHub deleted (and threads transferred away), so that
a delivery about them handled afterwards does not store them again.

Without it a deletion lasted until the next delivery about the thread or comment: a retry of
a delivery whose comment GitHub answered 5xx, GitHub's "Redeliver", or an older event taken
by another replica stored the deleted issue or comment again (the tracker showed its text,
the app analysed it and tried to comment on it).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deletions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_deletions"),
        sa.UniqueConstraint("key", name="uq_deletions_key"),
    )


def downgrade() -> None:
    op.drop_table("deletions")

"""verdicts: a person's word on a thread (`/rltracker kind <failure>`, `/rltracker
not-a-failure`), one row per thread, the latest wins.

The failure analyzer names the wrong kind on about a third of the reports it comments on; the
people it talks to can correct it, the correction is shown on the thread page and kept in the
failure comment (re-analysis does not overwrite it), and `rltracker verdicts export` writes
them as labelled threads a deployment can review and fit on.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "verdicts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("thread_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("is_failure_report", sa.Boolean(), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=True),
        sa.Column("login", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("analyzer_category", sa.String(length=64), nullable=True),
        sa.Column("analyzer_is_failure_report", sa.Boolean(), nullable=True),
        sa.Column("analyzer_version", sa.String(length=32), nullable=True),
        sa.Column("given_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], name="fk_verdicts_thread_id_threads",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_verdicts"),
        sa.UniqueConstraint("thread_id", name="uq_verdicts_thread_id"),
    )


def downgrade() -> None:
    op.drop_table("verdicts")

"""analysis_failures: threads the nightly re-analysis could not analyse or store.

One thread whose re-analysis raised ended the nightly step: the threads after it (in id
order) were never re-analysed, every night, as the same thread failed first each time. The
step now records the failure here (the analyzer version, the nights it failed, the last
error), goes on with the others, tries it again the next nights and leaves it out after
bot.scheduler.MAX_ATTEMPTS under one version. The downgrade drops the table (the step then
tries every such thread again).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_failures",
        sa.Column("thread_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False,
                  autoincrement=False),
        sa.Column("analyzer_version", sa.String(length=32), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"],
                                name="fk_analysis_failures_thread_id_threads", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("thread_id", name="pk_analysis_failures"),
    )


def downgrade() -> None:
    op.drop_table("analysis_failures")

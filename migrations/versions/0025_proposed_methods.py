"""Keep the study's memo of proposed methods in the store (site71).

`bot.site.study.ProposedMemo` remembered each stored proposal's proposed methods
(analyzers.proposed) in the process only: every process's first /study (a restart, a deploy,
each replica) ran the rule on every opening post again, about 11 CPU seconds at 20,000
proposals. The nightly step now leaves the memo in `proposed_methods` (one row per proposal:
a digest of what the answer was read from, and the method ids), and a process's first
computation reads it (docs/study.md, "Review site71"). The rows go with their thread
(ON DELETE CASCADE); the downgrade drops the table (the memo is made again by the next night).

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "proposed_methods",
        sa.Column("thread_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False,
                  autoincrement=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("methods", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"],
                                name="fk_proposed_methods_thread_id_threads", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("thread_id", name="pk_proposed_methods"),
    )


def downgrade() -> None:
    op.drop_table("proposed_methods")

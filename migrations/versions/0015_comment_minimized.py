"""comments.minimized_reason: why GitHub shows a comment hidden (None: shown, or not known).

GitHub lets maintainers hide a comment as spam, abuse, off-topic, outdated, resolved or a
duplicate (GraphQL `isMinimized` / `minimizedReason`); no webhook tells of it, so the sync
reads it. The analyzers are not given the comments hidden as spam, abuse or off-topic
(bot.analysis.analysis_input): they are no reply from someone else and raise no concern.
Rows stored before are not known to be hidden: the next sync of their thread fills the
column (`rltracker sync --full` reads every thread). The downgrade drops the column.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("comments") as batch:
        batch.add_column(sa.Column("minimized_reason", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("comments") as batch:
        batch.drop_column("minimized_reason")

"""repositories.resumed_at and repositories.resumed_by: who lifted a pause of the app's
comments in a repository, and when.

The nightly reception check pauses a repository (comments_paused, paused_reason) when its
maintainers hid, deleted or voted down the app's comments. A maintainer lifts it with
`/rltracker resume` (the login is stored as `@login`), an operator with
`rltracker repos resume OWNER/REPO` (stored as `operator`). The check then judges only the
app's comments posted after `resumed_at`, so the comments that caused the pause do not pause
it again the next night. Both columns start empty; the downgrade drops them.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("resumed_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("resumed_by", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("resumed_by")
        batch.drop_column("resumed_at")

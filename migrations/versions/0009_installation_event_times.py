"""installations.suspension_changed_at and installations.deleted_at: the times installation
events are ordered by, so that a stale one does not undo a newer state.

GitHub does not promise delivery order, and a retried or redelivered delivery repeats an old
payload: a `suspend` handled after the `unsuspend` left the app silent, and an
`installation_repositories.added` or `installation.created` handled after
`installation.deleted` brought the installation back. `suspension_changed_at` is the time of
the suspension state stored (a suspension's `suspended_at`; for an unsuspend the later of the
installation's `updated_at` and the time the delivery reached the inbox), `deleted_at` the
installation's `updated_at` in the `deleted` payload (bot.webhooks.installations). Rows stored
before have neither: the next event applies, as before. The downgrade drops them.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, not batch_alter_table: on SQLite a batch copies the table, and dropping
# the old `installations` would set every repository's installation_id to NULL (ON DELETE SET
# NULL). SQLite has ADD COLUMN, and DROP COLUMN since 3.35.


def upgrade() -> None:
    op.add_column("installations",
                  sa.Column("suspension_changed_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("installations", sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("installations", "deleted_at")
    op.drop_column("installations", "suspension_changed_at")
